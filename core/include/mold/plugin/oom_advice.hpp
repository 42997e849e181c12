#pragma once
/// What to tell a person about an out-of-memory error: one label that says what
/// ran out where, and hints they can act on, chosen by where it happened, the
/// backend and the workload.

#include <string>
#include <string_view>
#include <vector>

#include "mold/estimate/workload.hpp"
#include "mold/oom/oom.hpp"

namespace mold {

class Registry;

/// "CUDA", "ROCm", "Metal", "MPS", "CPU", "XPU", "Vulkan"; "unknown backend"
/// for "unknown" or empty; any other name as given.
std::string backend_display_name(std::string_view backend);

/// The headline. It follows the origin, never the platform this program was
/// built for:
///   remote: "Remote server out of memory on gpu-box:7680 (CUDA, NVIDIA H200)"
///   local:  "CUDA out of memory on NVIDIA H200", "CPU out of memory"
std::string oom_label(const OomReport& report);

/// Hints for `report`. `workload` (may be null) is the operation that failed;
/// with it the hints carry numbers from the registered estimator ("this decode
/// needs ~5.61 GiB; 3.69 GiB is free on the server") and the family plugin's
/// own hints. Never throws for a workload the registry cannot estimate: those
/// hints are left out.
std::vector<std::string> advise(const Registry& registry,
                                const OomReport& report,
                                const Workload* workload);

}  // namespace mold
