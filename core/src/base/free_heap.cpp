#include "mold/base/free_heap.hpp"

#include <cstddef>
#include <mutex>

#if defined(__GLIBC__)
#  include <malloc.h>

#  include <cstdlib>
#endif

namespace mold {

#if defined(__GLIBC__)
namespace {

// glibc's own limits once large blocks have been freed (its dynamic
// thresholds end there): blocks from 32 MiB up are mapped on their own, and
// a heap's free top is kept up to 64 MiB. Setting them here fixes them at
// those values instead of letting them drift with what was freed first.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 64 << 20;
// A block that free() takes for large (at least 64 KiB): freeing it makes
// glibc trim the calling thread's heap top against the trim threshold.
constexpr std::size_t kTrimProbe = 256 << 10;

// glibc trims a thread heap's free top only inside free(), when a large
// block is freed and more than the trim threshold is free there. With the
// threshold at zero for the length of one such free, the calling thread's
// heap keeps no more than a page-rounded pad.
void trim_own_heap_top() {
  static std::mutex serial;
  const std::lock_guard<std::mutex> lock(serial);
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, 0);
  void* probe = std::malloc(kTrimProbe);
  if (probe != nullptr) {
    static_cast<volatile char*>(probe)[0] = 0;  // kept: it must be freed
    std::free(probe);
  }
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace
#endif

void give_back_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
  trim_own_heap_top();
#endif
}

}  // namespace mold
