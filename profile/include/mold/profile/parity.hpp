#pragma once
/// Image k against image 1 (incident 1 of docs/incidents.md: "batch 2 should
/// either succeed or fail on batch 1 too"): each phase of every image within
/// a tolerance of the same phase of the first image. Two parts of a phase's
/// peak are told apart:
///
/// - its own working memory (its peak above what was allocated when it
///   started): growing, the phase itself needs more; parity is **broken**;
/// - what it found allocated beyond the weights of the components resident
///   during it: growing, memory was **carried** in from earlier images (a
///   stash freed later, or a leak), named with its bytes and the phase that
///   kept it; the phase's own working memory is within parity.
///
/// So the cache keeping more components resident in image 2 (which it parks
/// under memory pressure) is neither, while stale tensors or a parked
/// component's buffers are carried memory.

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
  /// Its own working memory: the first image's, what is allowed, the
  /// largest of the other images' and which image.
  Bytes first_working = 0;
  Bytes allowed_working = 0;
  Bytes worst_working = 0;
  int worst_working_image = 0;
  /// Carried: the bytes the worst image's phase found allocated beyond the
  /// first image's (weights aside), and who kept them: the phase of an
  /// earlier image ("" between phases), exact where the backend attributes
  /// allocations.
  Bytes carried = 0;
  std::string carried_by;
  int carried_by_image = -1;     ///< the newest image it kept them from
  int carried_since_image = -1;  ///< the oldest (exact only; else the same)
  bool carried_exact = false;
  bool ok = true;           ///< its own working memory within parity
  bool carried_in = false;  ///< beyond parity by memory carried in
};

struct ParityReport {
  bool ok = true;        ///< no phase's own working memory grew
  bool carried = false;  ///< some phase found memory carried in
  int images = 0;
  std::vector<PhaseParity> phases;
  std::string summary;
};

ParityReport check_parity(const MemoryProfile& profile,
                          const ParityOptions& options = {});

/// The images carried memory came from: "image 3", "images 2-5", or "an
/// earlier image" when unknown.
std::string carried_images(const PhaseParity& row);

}  // namespace mold
