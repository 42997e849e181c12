#pragma once
/// Records a run's events and images for `--json`: one JSON document,
/// {"schema": 1, "phases": [...done/failed events...], "images": [...]}.
/// Step events are counted, not kept.

#include <memory>
#include <string>

#include "mold/runtime/observer.hpp"

namespace mold {

class JsonRecorder : public RunObserver {
 public:
  JsonRecorder();
  ~JsonRecorder() override;
  void on_phase(const PhaseEvent& event) override;
  void on_image(const ImageRecord& image) override;
  /// Adds a top-level key with a JSON value given as text (the caller's own
  /// fields: model, prompt, weights).
  void set_field(const std::string& key, const std::string& json_text);
  /// The document so far, indented.
  std::string dump() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mold
