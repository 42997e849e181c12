#pragma once
// Advice for MPS OOMs that only this backend knows: PyTorch's cap on MPS
// memory and the other allocations that count against it.

#include <mold/estimate/workload.hpp>
#include <mold/oom/oom.hpp>
#include <string>
#include <vector>

namespace backend_metal {

std::vector<std::string> mps_oom_hints(const mold::OomReport& report,
                                       const mold::Workload* workload);

}  // namespace backend_metal
