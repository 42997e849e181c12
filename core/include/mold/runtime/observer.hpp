#pragma once
/// Observers of a run: the progress printer, the JSON recorder, the
/// profiler, the server's event stream.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "mold/runtime/allocation_scope.hpp"
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
  /// After the runtime's cleanup between images (the backend's cached memory
  /// returned): the memory that image left behind, and every component's
  /// residency. Filled before observers see the record (a sink sees zeros).
  MemoryStats after_cleanup;
  std::vector<CacheEntryState> residency;
  /// Where the backend attributes allocations (cpu): the bytes still live per
  /// allocation scope of the run, so far (earlier images' scopes included).
  bool attributed = false;
  std::vector<ScopeResidue> live_by_scope;
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
