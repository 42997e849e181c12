#pragma once
/// How many threads compute, and setting it: what Workload::threads says to
/// the estimators, and the one place every pool of the process is told its
/// count (mold run --threads, mold serve --threads).

#include <string>
#include <string_view>

namespace mold {

/// libtorch's intra-op threads (at::get_num_threads(): what
/// start_compute_threads set, else libtorch's own default) on the cpu
/// backend; 1 on any other, whose scratch does not grow with the host's
/// threads.
int compute_threads(std::string_view backend);

/// The threads each pool of this process computes with.
struct ThreadCounts {
  int intra_op = 0;  ///< libtorch's (OpenMP): an op's own parallel loops
  int inter_op = 0;  ///< libtorch's pool for independent ops (mold uses none)
  int blas = 0;      ///< the BLAS's own pool; 0 when it has none
  std::string blas_name;    ///< "OpenBLAS", "reference", ...
  std::string wait_policy;  ///< OMP_WAIT_POLICY as given; "" for OpenMP's
  /// Where the count came from (ThreadChoice::source); "" when a caller set
  /// it by number.
  std::string source;
};

/// Makes `threads` the count of every pool that computes: libtorch's
/// intra-op threads and the BLAS's own (OpenBLAS otherwise starts one per
/// logical CPU, whatever libtorch was told, and the two oversubscribe the
/// cores), and libtorch's inter-op pool 1 when it has not started. Throws
/// InvalidArgument below 1.
ThreadCounts set_compute_threads(int threads);

/// A tool's start: every pool at `flag` (--threads) when above 0, else
/// OMP_NUM_THREADS, else the CPUs this process may run on (its affinity
/// mask, capped by a cgroup CPU quota: choose_compute_threads), with where
/// the number came from.
ThreadCounts start_compute_threads(int flag);

/// The pools' counts as they are.
ThreadCounts compute_thread_counts();

/// "2 compute threads (libtorch 2, OpenBLAS 2, inter-op 1;
/// OMP_WAIT_POLICY=passive), from the CPUs this process may run on: 2 CPUs in
/// its affinity mask, no cgroup CPU quota", for a tool's first lines.
std::string describe(const ThreadCounts& counts);

}  // namespace mold
