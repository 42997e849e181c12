#include "mold/base/memory_stats.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

namespace mold {

Bytes read_host_rss() {
  std::ifstream statm("/proc/self/statm");
  Bytes size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * Bytes(sysconf(_SC_PAGESIZE));
}

Bytes read_host_peak_rss() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      Bytes kib = 0;
      return status >> kib ? kib * 1024 : 0;
    }
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

bool reset_host_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return bool(clear_refs);
}

Bytes working_peak(const MemoryStats& before, const MemoryStats& after) {
  const Bytes allocated = after.peak_allocated > before.allocated
                              ? after.peak_allocated - before.allocated
                              : 0;
  const Bytes reserved = after.peak_reserved > before.reserved
                             ? after.peak_reserved - before.reserved
                             : 0;
  return std::max(allocated, reserved);
}

}  // namespace mold
