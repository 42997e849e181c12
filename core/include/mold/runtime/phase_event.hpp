#pragma once
/// What the runtime reports as it goes: each phase of each image starting,
/// stepping and ending, with the memory before and after it and what the
/// cache held.

#include <string>
#include <string_view>
#include <vector>

#include "mold/base/memory_stats.hpp"
#include "mold/cache/cache.hpp"
#include "mold/estimate/estimate.hpp"

namespace mold {

/// reused: a phase a pipeline did not run for this image because it kept the
/// outcome of an earlier one (the prompt's embeddings, for images 2..N of a
/// batch): no memory was measured and no component was loaded.
enum class PhaseStage { start, step, done, failed, reused };
std::string_view to_string(PhaseStage stage);

struct PhaseEvent {
  int image = 0;          ///< 0-based index in the batch
  int images = 1;         ///< the batch size
  std::string phase;      ///< "text_encode", "denoise", "vae_encode", ...
  std::string component;  ///< what the phase ran ("" for none)
  /// What the phase was planned with: the estimate's key and sizes (tokens,
  /// pixels, batch).
  Workload workload;
  PhaseStage stage = PhaseStage::start;
  int step = 0;   ///< denoise: 1-based step of `steps` (step events)
  int steps = 0;  ///< 0 for phases without steps
  /// Seconds since the phase started (step, done, failed).
  double seconds = 0;
  /// The working memory the phase was estimated to need (and what the cache
  /// made room for).
  Estimate estimate;
  /// Memory when the phase started (after the cache made room) and when it
  /// ended; `after.peak_allocated` and `after.peak_reserved` are the peaks
  /// during the phase.
  MemoryStats before;
  MemoryStats after;
  /// Seconds the cache spent loading this phase's component before it started
  /// (from disk, or back from where it was parked); 0 when it was resident.
  double load_seconds = 0;
  /// Components the cache parked to make room for this phase.
  std::vector<std::string> parked;
  /// Every component the cache knows, as it was at the end of the phase
  /// (start events: after making room).
  std::vector<CacheEntryState> residency;
  /// A line of detail: the VAE's recovery rung, a warning.
  std::string detail;
  /// The failure's message (failed events).
  std::string error;
};

}  // namespace mold
