#pragma once
/// The local profiler's driver: an observer of the runtime that turns each
/// phase's done event and each image's record into a MemoryProfile for the
/// leak and parity analyses (mold/profile/).

#include <functional>
#include <string>

#include "mold/profile/memory_profile.hpp"
#include "mold/runtime/observer.hpp"

namespace mold {

class ProfileRecorder final : public RunObserver {
 public:
  explicit ProfileRecorder(MemoryProfile header);

  void on_phase(const PhaseEvent& event) override;
  void on_image(const ImageRecord& image) override;

  const MemoryProfile& profile() const { return profile_; }
  /// Called after each image is recorded (progress).
  void set_on_image(std::function<void(const ImageSample&)> callback) {
    on_image_ = std::move(callback);
  }

 private:
  MemoryProfile profile_;
  std::function<void(const ImageSample&)> on_image_;
};

}  // namespace mold
