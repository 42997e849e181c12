#pragma once
/// Does memory grow from image to image, and who keeps it? The rules
/// (docs/profiler.md):
///
/// - Each series (allocated, reserved, host RSS after each image) is judged
///   by series_verdict.hpp: warm-up found by a change-point, a noise-aware
///   slope test, bounded caches told from leaks by the flat stretch at the
///   end, "undecided" when the run is too short to tell.
/// - allocated (live tensors) growing is a device leak; reserved growing
///   while allocated does not is the allocator caching or fragmenting, never
///   a leak (PyTorch's CudaMemoryLeakCheck rule); host RSS growing with the
///   device flat is a host leak.
/// - The growth is attributed to the phase that allocated it where the
///   backend attributes allocations (exact), otherwise inferred from what
///   each phase left; per image means per image of the span that kept it.
///   A parked component whose park gave back less than its bytes is named.

#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/profile/memory_profile.hpp"
#include "mold/profile/series_verdict.hpp"

namespace mold {

struct LeakOptions {
  Bytes threshold = 4 * kKiB;   ///< device bytes per image that count
  Bytes host_threshold = kMiB;  ///< host RSS bytes per image that count
  int max_warmup = -1;          ///< images warm-up may take; < 0: half
  /// Of the peak, a floor under the threshold (0: none; the noise-aware
  /// threshold took its place).
  double peak_fraction = 0;
  double noise_factor = 6;  ///< SeriesRules::noise_factor
  double step_t = 5;        ///< SeriesRules::step_t
  int min_flat_images = 4;  ///< SeriesRules::min_flat_images
};

/// Who keeps the growth.
struct LeakAttribution {
  std::string phase;      ///< "" for the pipeline's work between phases
  std::string component;  ///< the phase's component
  /// What it kept, per image of the images it kept something in (from the
  /// first to the last: an intermittent leak's rate, not diluted by the
  /// images before it started).
  double bytes_per_image = 0;
  int images = 0;      ///< the images of that span
  bool exact = false;  ///< from allocation scopes; false: inferred
  /// Exact only: what it allocated in every image (or every k-th) from the
  /// first after warm-up to the one before the last is still live: never
  /// freed, as a cache's entries are once replaced.
  bool persistent = false;
  /// The same from the first image of the run (warm-up included): a leak
  /// whatever the series' noise says.
  bool since_first_image = false;
  std::string detail;
};

/// A component parked (or unloaded) that still holds device bytes.
struct ParkedHolding {
  std::string component;
  Bytes bytes = 0;     ///< its weights, as the cache counts them
  Bytes held = 0;      ///< what the park did not give back
  bool exact = false;  ///< from allocation scopes; false: from its last park
};

enum class LeakVerdict {
  clean,
  bounded,    ///< memory grew and stopped: a cache that filled
  leak,       ///< device (or, with the device flat, host) memory grows, or a
              ///< parked component still holds device memory
  undecided,  ///< it rises, but the run is too short or noisy to tell
  too_few,    ///< fewer than 4 images
};

struct LeakReport {
  int images = 0;
  int warmup = 0;  ///< images the allocated series' warm-up excludes
  LeakVerdict verdict = LeakVerdict::clean;
  SeriesVerdict allocated, reserved, host;
  bool host_only = false;  ///< the leak is in host memory only
  bool caching = false;    ///< reserved grows, allocated does not
  /// undecided: the images a run needs to tell (the most of the series').
  int images_needed = 0;
  std::vector<LeakAttribution> attributions;
  std::vector<ParkedHolding> parked_holding;
  /// One line: "leak: allocated grows 64.0 KiB per image ...", "clean: ...".
  std::string summary;
};

LeakReport analyze_leaks(const MemoryProfile& profile,
                         const LeakOptions& options = {});

std::string to_string(LeakVerdict verdict);

}  // namespace mold
