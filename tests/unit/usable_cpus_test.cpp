// The default compute threads: the CPUs this process may run on (its
// affinity mask, capped by a cgroup CPU quota rounded up), with --threads and
// OMP_NUM_THREADS over them. The cgroup files are laid out in a temp dir as
// the kernel mounts them (v2 unified, v1 cpu,cpuacct).
#include <sched.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/device/usable_cpus.hpp>
#include <string>

#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::TempDir;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

}  // namespace

TEST_CASE("cgroup CPU quotas read as CPUs", "[threads]") {
  CHECK(mold::cgroup_v2_cpu_quota("150000 100000") == Approx(1.5));
  CHECK(mold::cgroup_v2_cpu_quota("200000 100000\n") == Approx(2.0));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota("max 100000"));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota("max"));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota(""));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota("0 100000"));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota("100000 0"));
  CHECK_FALSE(mold::cgroup_v2_cpu_quota("1e5 100000"));
  CHECK(mold::cgroup_v1_cpu_quota("50000", "100000") == Approx(0.5));
  CHECK_FALSE(mold::cgroup_v1_cpu_quota("-1", "100000"));
  CHECK_FALSE(mold::cgroup_v1_cpu_quota("abc", "100000"));
}

TEST_CASE("the quota is the smallest from the process's cgroup up",
          "[threads]") {
  TempDir root;
  const fs::path base = root.path();
  SECTION("cgroup v2: the parent's is smaller than the leaf's") {
    write(base / "system.slice/cpu.max", "150000 100000");
    write(base / "system.slice/app.service/cpu.max", "400000 100000");
    const auto q =
        mold::cgroup_cpu_quota(base.string(), "0::/system.slice/app.service\n");
    REQUIRE(q.cpus);
    CHECK(*q.cpus == Approx(1.5));
    CHECK(q.file == (base / "system.slice/cpu.max").string());
  }
  SECTION("cgroup v2: no quota anywhere") {
    write(base / "user.slice/cpu.max", "max 100000");
    CHECK_FALSE(mold::cgroup_cpu_quota(base.string(), "0::/user.slice\n").cpus);
  }
  SECTION("cgroup v2 in a container: its own cgroup is the mount's root") {
    write(base / "cpu.max", "200000 100000");
    const auto q = mold::cgroup_cpu_quota(
        base.string(), "0::/kubepods/burstable/pod1234/abcd\n");
    REQUIRE(q.cpus);
    CHECK(*q.cpus == Approx(2.0));
  }
  SECTION("cgroup v1: the cpu controller's mount") {
    write(base / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000");
    write(base / "cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000");
    const auto q = mold::cgroup_cpu_quota(
        base.string(),
        "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
    REQUIRE(q.cpus);
    CHECK(*q.cpus == Approx(2.5));
  }
  SECTION("no cgroup file system, or a hostile /proc/self/cgroup") {
    CHECK_FALSE(mold::cgroup_cpu_quota(base.string(), "0::/a\n").cpus);
    CHECK_FALSE(mold::cgroup_cpu_quota(base.string(), "").cpus);
    CHECK_FALSE(mold::cgroup_cpu_quota(base.string(), "garbage").cpus);
    CHECK_FALSE(
        mold::cgroup_cpu_quota(base.string(), "0::/../../../etc\n").cpus);
  }
}

TEST_CASE(
    "the default threads: --threads, else OMP_NUM_THREADS, else the "
    "usable CPUs",
    "[threads]") {
  mold::UsableCpus cpus;
  cpus.affinity = 8;
  CHECK(cpus.count() == 8);
  CHECK(cpus.describe() == "8 CPUs in its affinity mask, no cgroup CPU quota");
  cpus.quota = 1.5;
  cpus.quota_file = "/sys/fs/cgroup/cpu.max";
  CHECK(cpus.count() == 2);  // rounded up
  CHECK(cpus.describe() ==
        "8 CPUs in its affinity mask, cgroup CPU quota "
        "1.5 CPUs (/sys/fs/cgroup/cpu.max)");
  cpus.quota = 0.2;
  CHECK(cpus.count() == 1);
  cpus.quota = 32;
  CHECK(cpus.count() == 8);  // the mask is the smaller

  CHECK(mold::choose_compute_threads(3, "5", cpus).threads == 3);
  CHECK(mold::choose_compute_threads(3, "5", cpus).source == "--threads");
  const auto omp = mold::choose_compute_threads(0, "5,2", cpus);
  CHECK(omp.threads == 5);
  CHECK(omp.source == "OMP_NUM_THREADS=5");
  const auto mine = mold::choose_compute_threads(0, nullptr, cpus);
  CHECK(mine.threads == 8);
  CHECK(mine.source == "the CPUs this process may run on: " + cpus.describe());
  for (const char* bad : {"0", "-2", "many", "99999", ""}) {
    INFO(bad);
    const auto choice = mold::choose_compute_threads(0, bad, cpus);
    CHECK(choice.threads == 8);
    if (*bad) CHECK_THAT(choice.source, Catch::Contains("ignored"));
  }
}

TEST_CASE("this process's usable CPUs follow its affinity mask", "[threads]") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  const mold::UsableCpus cpus = mold::usable_cpus();
  CHECK(cpus.affinity == CPU_COUNT(&set));
  CHECK(cpus.count() >= 1);
  CHECK(cpus.count() <= cpus.affinity);
}
