#include "mold/tensor/compute_threads.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <cstdlib>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"
#include "mold/device/blas_library.hpp"
#include "mold/device/usable_cpus.hpp"

namespace mold {

int compute_threads(std::string_view backend) {
  return backend == "cpu" ? at::get_num_threads() : 1;
}

ThreadCounts set_compute_threads(int threads) {
  if (threads < 1)
    throw InvalidArgument(fmt::format(
        "{} compute threads: give at least 1 (--threads)", threads));
  at::set_num_threads(threads);
  set_blas_threads(threads);
  try {
    // Only before the pool starts (a second call throws): mold runs no
    // independent ops side by side, so one thread is all it would use.
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
  }
  return compute_thread_counts();
}

ThreadCounts start_compute_threads(int flag) {
  const ThreadChoice choice = choose_compute_threads(
      flag, std::getenv("OMP_NUM_THREADS"), usable_cpus());
  ThreadCounts counts = set_compute_threads(choice.threads);
  counts.source = choice.source;
  return counts;
}

ThreadCounts compute_thread_counts() {
  ThreadCounts counts;
  counts.intra_op = at::get_num_threads();
  counts.inter_op = at::get_num_interop_threads();
  const BlasLibrary blas = loaded_blas_library();
  counts.blas = blas.threads;
  counts.blas_name = std::string(to_string(blas.kind));
  if (const char* policy = std::getenv("OMP_WAIT_POLICY"))
    counts.wait_policy = ascii_lower(policy);
  return counts;
}

std::string describe(const ThreadCounts& counts) {
  const std::string blas =
      counts.blas > 0 ? fmt::format("{} {}", counts.blas_name, counts.blas)
                      : fmt::format("{} BLAS", counts.blas_name);
  const std::string waits =
      counts.wait_policy.empty()
          ? "OpenMP spins, then sleeps"
          : fmt::format("OMP_WAIT_POLICY={}", counts.wait_policy);
  return fmt::format("{} compute thread{} (libtorch {}, {}, inter-op {}; {}){}",
                     counts.intra_op, counts.intra_op == 1 ? "" : "s",
                     counts.intra_op, blas, counts.inter_op, waits,
                     counts.source.empty() ? "" : ", from " + counts.source);
}

}  // namespace mold
