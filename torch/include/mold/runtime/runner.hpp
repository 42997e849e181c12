#pragma once
/// Drives a pipeline over a batch: image i of N uses seed + i, every phase
/// through the model cache, observers told of each phase and image.

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "mold/runtime/pipeline.hpp"

namespace mold {

/// Receives each image as it is made. The sink may fill in record.path (where
/// it wrote the image) before observers see the record.
using ImageSink =
    std::function<void(ImageRecord& record, const GeneratedImage& image)>;

class Runner {
 public:
  /// Adds the pipeline's components to `cache` (the pipeline and the cache
  /// must outlive the runner).
  Runner(Pipeline& pipeline, ModelCache& cache, const Registry& registry);

  void add_observer(RunObserver* observer);
  /// Stops telling `observer` (no-op when it was not added).
  void remove_observer(RunObserver* observer);
  /// Makes request->batch images. Between images the backend's cached memory is
  /// returned, so that what one image leaves is measured, not hidden, by the
  /// next. Throws the first failure (after observers saw its failed event).
  void run(const ResolvedRequest& request, const ImageSink& sink);
  /// The next runs stop before a phase or at a step when `cancelled` returns
  /// true, with mold::Cancelled(`reason`); an empty function: never.
  void set_cancel(std::function<bool()> cancelled, std::string reason = {});
  /// The next runs learn their estimates from `history` and record every
  /// phase into it (RunContext::set_history); null: neither.
  void set_history(std::shared_ptr<MeasuredHistory> history,
                   std::string by = "mold run", bool learn = true);
  /// The phases each image will go through.
  std::vector<PlannedPhase> plan(const ResolvedRequest& request) const;

 private:
  Pipeline& pipeline_;
  ModelCache& cache_;
  const Registry& registry_;
  std::vector<RunObserver*> observers_;
  std::function<bool()> cancelled_;
  std::string cancel_reason_;
  std::shared_ptr<MeasuredHistory> history_;
  std::string recorded_by_;
  bool learn_ = true;
};

}  // namespace mold
