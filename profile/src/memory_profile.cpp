#include "mold/profile/memory_profile.hpp"

namespace mold {

Bytes PhaseSample::working_peak() const {
  return after.peak_allocated > before.allocated
             ? after.peak_allocated - before.allocated
             : 0;
}

Bytes PhaseSample::unaccounted_peak() const {
  Bytes weights = 0;
  for (const auto& entry : residency)
    if (entry.residency == Residency::device) weights += entry.bytes;
  return after.peak_allocated > weights ? after.peak_allocated - weights : 0;
}

std::string describe_sampling(const MemoryProfile& p) {
  if (p.driver == "process")
    return p.backend.empty()
               ? "sampled from outside: the process's resident set (host "
                 "memory only, no NVML)"
               : "sampled from outside: the process's resident set and its "
                 "GPU memory from NVML (" +
                     p.device + ")";
  return "on " + (p.backend.empty() ? std::string("no backend") : p.backend) +
         " (" + p.device + ")";
}

}  // namespace mold
