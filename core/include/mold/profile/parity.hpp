#pragma once
/// Image k against image 1 (incident 1 of docs/incidents.md: "batch 2 should
/// either succeed or fail on batch 1 too"): each phase's peak of every image
/// within a tolerance of the same phase's peak in the first image. The peak
/// compared is the one the cache does not account for: the phase's peak
/// beyond the weights of the components resident during it, so that the
/// cache keeping more components resident in image 2 (which it parks under
/// memory pressure) is not a breach, and what earlier images left, stale
/// tensors or a parked component's buffers, is.

#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/profile/memory_profile.hpp"

namespace mold {

struct ParityOptions {
  double relative = 0.01;  ///< of the first image's peak
  Bytes absolute = kMiB;   ///< added to it
};

/// One phase (its n-th run within an image, for a phase run twice) across
/// the images.
struct PhaseParity {
  std::string phase;
  int occurrence = 0;  ///< 0: its first run in each image
  Bytes first = 0;     ///< the first image's unaccounted peak
  Bytes allowed = 0;   ///< first x (1 + relative) + absolute
  Bytes worst = 0;     ///< the largest of the other images'
  int worst_image = 0;
  Bytes first_raw_peak = 0;  ///< the first image's peak, weights included
  Bytes worst_raw_peak = 0;
  bool ok = true;
};

struct ParityReport {
  bool ok = true;
  int images = 0;
  std::vector<PhaseParity> phases;
  std::string summary;
};

ParityReport check_parity(const MemoryProfile& profile,
                          const ParityOptions& options = {});

}  // namespace mold
