#include "mold/oom/oom.hpp"

namespace mold {

void assess_fragmentation(OomReport& report) {
  if (!report.reserved_unallocated) {
    report.fragmentation = false;
    return;
  }
  const Bytes unused = *report.reserved_unallocated;
  const bool covers_request = report.requested && unused >= *report.requested;
  const bool large_share = report.capacity && unused * 5 >= *report.capacity;
  report.fragmentation = unused > 0 && (covers_request || large_share);
}

}  // namespace mold
