#pragma once
/// Does memory grow from image to image, and who keeps it? The rules
/// (docs/profiler.md):
///
/// - Warm-up is excluded: images until the reserved bytes stay unchanged for
///   `stable_images` images, at most `max_warmup`.
/// - A series leaks when, after warm-up, it rises at every image by at least
///   the threshold, or its least-squares slope exceeds max(threshold,
///   `peak_fraction` of its peak) per image with R^2 >= `min_r_squared`.
/// - allocated (live tensors) leaking is a device leak; reserved growing
///   while allocated does not is the allocator caching or fragmenting, never
///   a leak (PyTorch's CudaMemoryLeakCheck rule); host RSS leaking with the
///   device flat is a host leak.
/// - The residue is attributed to the phase that allocated it where the
///   backend attributes allocations (exact), otherwise inferred from what
///   each phase left; a parked component whose park gave back less than its
///   bytes is named.

#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/profile/memory_profile.hpp"
#include "mold/profile/trend.hpp"

namespace mold {

struct LeakOptions {
  Bytes threshold = 4 * kKiB;   ///< device bytes per image that count
  Bytes host_threshold = kMiB;  ///< host RSS bytes per image that count
  int max_warmup = 3;
  int stable_images = 2;
  double min_r_squared = 0.7;
  double peak_fraction = 0.001;
};

/// One series (one value per image after warm-up) against the rules.
struct SeriesVerdict {
  std::string name;            ///< "allocated", "reserved", "host_rss"
  std::vector<double> values;  ///< after warm-up
  Trend trend;
  Bytes threshold = 0;        ///< the rule's step threshold
  Bytes slope_threshold = 0;  ///< max(threshold, peak_fraction x peak)
  bool rises_every_image = false;
  bool sloped = false;  ///< slope > slope_threshold with R^2 high enough
  bool grows() const { return rises_every_image || sloped; }
  /// Why it grows or not, in words with the numbers.
  std::string reason;
};

/// Who keeps the growth.
struct LeakAttribution {
  std::string phase;      ///< "" for the pipeline's work between phases
  std::string component;  ///< the phase's component
  double bytes_per_image = 0;
  bool exact = false;  ///< from allocation scopes; false: inferred
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
  leak,     ///< device (or, with the device flat, host) memory grows, or a
            ///< parked component still holds device memory
  too_few,  ///< fewer than 3 images after warm-up
};

struct LeakReport {
  int images = 0;
  int warmup = 0;  ///< images excluded
  LeakVerdict verdict = LeakVerdict::clean;
  SeriesVerdict allocated, reserved, host;
  bool host_only = false;  ///< the leak is in host memory only
  bool caching = false;    ///< reserved grows, allocated does not
  std::vector<LeakAttribution> attributions;
  std::vector<ParkedHolding> parked_holding;
  /// One line: "leak: allocated grows 64.0 KiB per image ...", "clean: ...".
  std::string summary;
};

LeakReport analyze_leaks(const MemoryProfile& profile,
                         const LeakOptions& options = {});

std::string to_string(LeakVerdict verdict);

}  // namespace mold
