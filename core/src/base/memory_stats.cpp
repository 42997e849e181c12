#include "mold/base/memory_stats.hpp"

#include <unistd.h>

#include <fstream>

namespace mold {

Bytes read_host_rss() {
  std::ifstream statm("/proc/self/statm");
  Bytes size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * Bytes(sysconf(_SC_PAGESIZE));
}

}  // namespace mold
