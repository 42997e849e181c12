#pragma once
// Advice for CUDA and ROCm OOMs that only this backend knows: the caching
// allocator's settings, and what helps on ROCm where they do not.

#include <mold/estimate/workload.hpp>
#include <mold/oom/oom.hpp>
#include <string>
#include <vector>

namespace backend_cuda {

/// CUDA: fragmentation -> PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
/// (in the server's environment when the error came from a server).
std::vector<std::string> cuda_oom_hints(const mold::OomReport& report,
                                        const mold::Workload* workload);

/// ROCm: expandable_segments did not help there (docs/incidents.md, the VAE
/// decode on a 48 GB card): evict resident models before the operation.
std::vector<std::string> rocm_oom_hints(const mold::OomReport& report,
                                        const mold::Workload* workload);

}  // namespace backend_cuda
