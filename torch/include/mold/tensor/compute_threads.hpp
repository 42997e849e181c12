#pragma once
/// How many threads compute an op at once on a backend: what
/// Workload::threads says to the estimators.

#include <string_view>

namespace mold {

/// libtorch's intra-op threads (at::get_num_threads(): OMP_NUM_THREADS, else
/// the physical cores) on the cpu backend; 1 on any other, whose scratch does
/// not grow with the host's threads.
int compute_threads(std::string_view backend);

}  // namespace mold
