#include "cuda_oom_hints.hpp"

#include <mold/base/bytes.hpp>

namespace backend_cuda {

std::vector<std::string> cuda_oom_hints(const mold::OomReport& report,
                                        const mold::Workload* /*workload*/) {
  if (!report.fragmentation || !report.reserved_unallocated) return {};
  const bool remote = report.origin.kind == mold::Origin::Kind::remote;
  return {mold::format_bytes(*report.reserved_unallocated) +
          " is reserved by PyTorch but unallocated (fragmentation): set "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" +
          (remote ? " in the server's environment" : "")};
}

std::vector<std::string> rocm_oom_hints(const mold::OomReport& report,
                                        const mold::Workload* /*workload*/) {
  if (!report.fragmentation || !report.reserved_unallocated) return {};
  return {mold::format_bytes(*report.reserved_unallocated) +
          " is reserved but unallocated (fragmentation); on ROCm "
          "expandable_segments did not help (docs/incidents.md): evict "
          "resident models before the operation instead"};
}

}  // namespace backend_cuda
