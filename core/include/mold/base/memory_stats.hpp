#pragma once
/// A snapshot of one device's memory, as a backend sees it.

#include <array>
#include <cstdint>

#include "mold/base/bytes.hpp"

namespace mold {

/// allocated = bytes in live tensors; reserved = bytes the allocator holds
/// (live tensors plus its cache); reserved - allocated is what empty_cache()
/// can give back.
struct MemoryStats {
  Bytes total = 0;           ///< device capacity (or the configured limit)
  Bytes free = 0;            ///< what a new allocation can still get
  Bytes allocated = 0;       ///< live tensor bytes
  Bytes reserved = 0;        ///< held by the allocator, live or cached
  Bytes peak_allocated = 0;  ///< max of allocated since the last reset_peak()
  Bytes peak_reserved = 0;   ///< max of reserved since the last reset_peak()
  Bytes host_rss = 0;        ///< resident set size of this process
  /// What the device says is in use by every process (total - free of
  /// cudaMemGetInfo); 0 where the backend cannot say.
  Bytes device_used = 0;
  /// Caching allocators (cuda): cached blocks split and not in use (what
  /// fragmentation keeps), times an allocation had to free the cache and
  /// retry, and out-of-memory errors, since the process started; 0 elsewhere.
  Bytes inactive_split = 0;
  std::uint64_t alloc_retries = 0;
  std::uint64_t ooms = 0;

  Bytes reserved_unallocated() const {
    return reserved > allocated ? reserved - allocated : 0;
  }
};

/// What a phase needed above what was there when it started (`before`;
/// `after` holds the peaks during it): the larger of the allocated and the
/// reserved peak above their start. A caching allocator's reserved peak is
/// what its free memory is checked against; the cpu backend's two are the
/// same.
Bytes working_peak(const MemoryStats& before, const MemoryStats& after);

/// One field of MemoryStats by the name mold's JSON gives it (mold run --json,
/// the profiler's reports, the server's API). Every field is a 64-bit count.
struct MemoryStatsField {
  const char* name;
  std::uint64_t MemoryStats::*member;
};
inline constexpr std::array<MemoryStatsField, 11> kMemoryStatsFields = {{
    {"total", &MemoryStats::total},
    {"free", &MemoryStats::free},
    {"allocated", &MemoryStats::allocated},
    {"reserved", &MemoryStats::reserved},
    {"peak_allocated", &MemoryStats::peak_allocated},
    {"peak_reserved", &MemoryStats::peak_reserved},
    {"host_rss", &MemoryStats::host_rss},
    {"device_used", &MemoryStats::device_used},
    {"inactive_split", &MemoryStats::inactive_split},
    {"alloc_retries", &MemoryStats::alloc_retries},
    {"ooms", &MemoryStats::ooms},
}};

/// Resident set size of this process, from /proc/self/statm; 0 where
/// unavailable.
Bytes read_host_rss();

/// The peak resident set size of this process (VmHWM of /proc/self/status)
/// since it started or since reset_host_peak_rss(); 0 where unavailable.
Bytes read_host_peak_rss();
/// Restarts the peak from the current resident set size (writes 5 to
/// /proc/self/clear_refs); false where the kernel does not allow it.
bool reset_host_peak_rss();

}  // namespace mold
