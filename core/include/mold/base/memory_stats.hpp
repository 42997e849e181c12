#pragma once
/// A snapshot of one device's memory, as a backend sees it.

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

  Bytes reserved_unallocated() const {
    return reserved > allocated ? reserved - allocated : 0;
  }
};

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
