#pragma once
/// What a profiler records of a run of N images: per image the memory it left
/// behind (after the runtime's cleanup), per phase of each image the memory
/// before and after it and its peak, the components' residency, and where
/// the backend attributes allocations the bytes still live per scope. The
/// drivers fill it (the local runtime through ProfileRecorder, a black-box
/// process sampler); the analyses read it (leak_analysis.hpp, parity.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/base/memory_stats.hpp"
#include "mold/cache/cache.hpp"

namespace mold {

/// One phase of one image.
struct PhaseSample {
  int image = 0;
  std::string phase;      ///< "text_encode", "denoise", ...
  std::string component;  ///< what it ran
  /// After its component was made resident, and at its end (peaks: during).
  MemoryStats before;
  MemoryStats after;
  Bytes estimate = 0;  ///< the working memory it was given
  double seconds = 0;
  std::vector<std::string> parked;         ///< parked to make room for it
  std::vector<CacheEntryState> residency;  ///< at its end

  /// Its peak above what was allocated when it started.
  Bytes working_peak() const;
  /// Its peak beyond the weights of the components resident during it: what
  /// the cache does not account for (working memory, and whatever earlier
  /// images left).
  Bytes unaccounted_peak() const;
};

/// Bytes still live that one scope of the run allocated (backends that
/// attribute allocations).
struct ResidueSample {
  int image = -1;  ///< -1: allocated outside the run's scopes
  std::string phase;
  std::string component;
  std::string kind;  ///< "phase", "load", "between_phases", "outside"
  Bytes bytes = 0;
};

/// One image, after the runtime's cleanup.
struct ImageSample {
  int image = 0;
  std::uint64_t seed = 0;
  double seconds = 0;
  MemoryStats after;
  std::vector<CacheEntryState> residency;
  bool attributed = false;  ///< `residue` is known
  std::vector<ResidueSample> residue;
};

struct MemoryProfile {
  std::string driver;   ///< "local" (the runtime), "process" (black box)
  std::string subject;  ///< "z-image-turbo (tiny, seeded weights)", "pid 123"
  std::string backend;  ///< "cpu", "cuda", ... ("" for a black box)
  std::string device;
  std::vector<ImageSample> images;
  std::vector<PhaseSample> phases;
};

/// What was sampled, in words for a report's header: "on cpu (AMD EPYC)",
/// or for a black box "sampled from outside: the process's resident set
/// (host memory only, no NVML)".
std::string describe_sampling(const MemoryProfile& profile);

}  // namespace mold
