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

}  // namespace mold
