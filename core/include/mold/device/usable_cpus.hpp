#pragma once
/// How many CPUs this process may compute on, and so how many compute threads
/// mold starts by default: the CPUs of its affinity mask (taskset, a
/// container's cpuset), capped by a cgroup CPU quota where one is set (a
/// container's --cpus, systemd's CPUQuota=). libtorch's own default is the
/// physical cores of the whole machine, which a 2-vCPU VM reports as 1 and a
/// container limited to 2 of 64 CPUs as 32. Torch-free.

#include <optional>
#include <string>
#include <string_view>

namespace mold {

/// The CPUs this process may run on.
struct UsableCpus {
  int affinity = 1;  ///< CPUs in its affinity mask (sched_getaffinity)
  /// The cgroup's CPU quota in CPUs (1.5 for "150000 100000"); none when the
  /// cgroup sets none or cannot be read.
  std::optional<double> quota;
  std::string quota_file;  ///< where the quota was read ("" for none)

  /// The affinity capped by the quota rounded up, at least 1.
  int count() const;
  /// "2 CPUs in its affinity mask, no cgroup CPU quota", "8 CPUs in its
  /// affinity mask, cgroup CPU quota 1.5 CPUs (/sys/fs/cgroup/cpu.max)".
  std::string describe() const;
};

/// This process's: its affinity mask and its cgroup's quota (cgroup v2's
/// cpu.max, or v1's cpu.cfs_quota_us / cpu.cfs_period_us), read under the
/// cgroup path /proc/self/cgroup names, then at the mount's root.
UsableCpus usable_cpus();

/// The CPU quota (and the file it came from) of the cgroup that
/// `proc_self_cgroup` (the text of /proc/self/cgroup) names, under the
/// cgroup file systems mounted at `root` (/sys/fs/cgroup): the smallest of
/// the quotas from that cgroup up to the mount's root, as the kernel applies
/// each. A path the mount does not show (a container's own cgroup namespace
/// mounts its cgroup as the root) is read from the root.
struct CgroupQuota {
  std::optional<double> cpus;
  std::string file;
};
CgroupQuota cgroup_cpu_quota(const std::string& root,
                             std::string_view proc_self_cgroup);

/// A cgroup v2 `cpu.max` ("150000 100000", "max 100000") as CPUs; none for
/// "max" or text that is not a quota and a period.
std::optional<double> cgroup_v2_cpu_quota(std::string_view cpu_max);

/// A cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` as CPUs; none for
/// a quota of -1 (unlimited) or text that is not a number.
std::optional<double> cgroup_v1_cpu_quota(std::string_view quota_us,
                                          std::string_view period_us);

/// The compute threads to start with, and where the number came from.
struct ThreadChoice {
  int threads = 1;
  /// "--threads", "OMP_NUM_THREADS=3", or "the CPUs this process may run
  /// on: ..." (UsableCpus::describe).
  std::string source;
};

/// `flag` (--threads) when above 0, else OMP_NUM_THREADS when it is a
/// whole number from 1 (its first entry, as OpenMP reads "4,2"), else
/// `cpus`' count. `omp_num_threads` is the variable's value, or null when
/// it is unset.
ThreadChoice choose_compute_threads(int flag, const char* omp_num_threads,
                                    const UsableCpus& cpus);

}  // namespace mold
