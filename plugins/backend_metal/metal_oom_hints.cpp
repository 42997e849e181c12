#include "metal_oom_hints.hpp"

#include <mold/base/bytes.hpp>

namespace backend_metal {

std::vector<std::string> mps_oom_hints(const mold::OomReport& report,
                                       const mold::Workload* /*workload*/) {
  std::vector<std::string> hints;
  if (!report.capacity) return hints;
  hints.push_back("PyTorch caps MPS at " +
                  mold::format_bytes(*report.capacity) +
                  " (max allowed); raising PYTORCH_MPS_HIGH_WATERMARK_RATIO "
                  "lifts the cap at the risk of swapping the whole system: "
                  "lower the resolution first");
  if (report.other_allocations)
    hints.push_back(mold::format_bytes(*report.other_allocations) +
                    " of other allocations (not PyTorch's) count against that "
                    "cap: close other GPU-heavy apps");
  return hints;
}

}  // namespace backend_metal
