#pragma once
/// Progress lines of a run, one per phase start and end (and denoise steps),
/// with times, estimates, peaks and what the cache parked:
///   [1/2] text_encode: start (text_encoder; estimate 12.0 MiB; free 1.0 GiB;
///         parked transformer)
///   [1/2] denoise: step 3/8 (0.9 s)
///   [1/2] denoise: done in 7.2 s (peak 310.5 MiB, estimate 320.0 MiB)
///   [1/2] saved out/z-image-turbo-42.png (512x512, seed 42, 9.1 s)

#include <ostream>
#include <string>

#include "mold/runtime/observer.hpp"

namespace mold {

class ProgressPrinter : public RunObserver {
 public:
  /// `show_steps`: a line per denoise step too.
  explicit ProgressPrinter(std::ostream& out, bool show_steps = true);
  void on_phase(const PhaseEvent& event) override;
  void on_image(const ImageRecord& image) override;

 private:
  std::ostream& out_;
  bool show_steps_;
};

}  // namespace mold
