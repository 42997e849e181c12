#pragma once
/// Observers of a run: the progress printer, the JSON recorder, the
/// profiler, the server's event stream.

#include <cstdint>
#include <filesystem>
#include <string>

#include "mold/runtime/phase_event.hpp"

namespace mold {

/// One finished image of a run.
struct ImageRecord {
  int image = 0;
  int images = 1;
  std::uint64_t seed = 0;
  std::filesystem::path path;  ///< where it was written ("" when not written)
  int width = 0;
  int height = 0;
  double seconds = 0;  ///< the whole image, every phase
};

/// Called on the thread that runs the pipeline, in order. An observer that
/// throws stops the run.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_phase(const PhaseEvent& event) = 0;
  virtual void on_image(const ImageRecord& /*image*/) {}
};

}  // namespace mold
