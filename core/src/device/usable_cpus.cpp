#include "mold/device/usable_cpus.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

namespace mold {

namespace {

namespace fs = std::filesystem;

std::string_view cgroup_text_trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

/// A whole number, the whole of `text`, or none.
std::optional<long long> cgroup_whole_number(std::string_view text) {
  text = cgroup_text_trimmed(text);
  long long value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text;
  std::getline(in, text);
  return in.bad() ? std::nullopt : std::optional<std::string>(text);
}

/// CPUs in this process's affinity mask (the sets grow for machines with
/// more CPUs than a cpu_set_t holds); the online CPUs when it cannot be read.
int affinity_cpus() {
  for (int size = 1024; size <= (1 << 20); size *= 2) {
    const std::size_t bytes = CPU_ALLOC_SIZE(size);
    const auto free_set = [](cpu_set_t* set) { CPU_FREE(set); };
    std::unique_ptr<cpu_set_t, decltype(free_set)> set(CPU_ALLOC(size),
                                                       free_set);
    if (!set) break;
    CPU_ZERO_S(bytes, set.get());
    if (sched_getaffinity(0, bytes, set.get()) == 0)
      return std::max(1, CPU_COUNT_S(bytes, set.get()));
    if (errno != EINVAL) break;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

/// One line of /proc/self/cgroup: "ID:CONTROLLERS:PATH".
struct CgroupLine {
  std::string controllers;  ///< "" for cgroup v2's unified hierarchy
  std::string path;
};

std::vector<CgroupLine> cgroup_lines(std::string_view text) {
  std::vector<CgroupLine> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second =
        first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    lines.push_back(
        {line.substr(first + 1, second - first - 1), line.substr(second + 1)});
  }
  return lines;
}

bool names_cpu_controller(const std::string& controllers) {
  std::istringstream in(controllers);
  for (std::string name; std::getline(in, name, ',');)
    if (name == "cpu") return true;
  return false;
}

/// The smallest quota from `mount`/`path` up to `mount`, read by `quota_in`
/// from each directory; from `mount` alone when `path` is not under it.
template <typename QuotaIn>
CgroupQuota smallest_quota(const fs::path& mount, const std::string& path,
                           QuotaIn quota_in) {
  CgroupQuota smallest;
  const fs::path top = mount.lexically_normal();
  const auto under_top = [&top](const fs::path& dir) {
    const fs::path relative = dir.lexically_relative(top);
    return !relative.empty() && relative.native().rfind("..", 0) != 0;
  };
  fs::path dir = (top / fs::path(path).relative_path()).lexically_normal();
  std::error_code ec;
  if (!under_top(dir) || !fs::is_directory(dir, ec)) dir = top;
  for (;;) {
    if (const auto found = quota_in(dir);
        found.cpus && (!smallest.cpus || *found.cpus < *smallest.cpus))
      smallest = found;
    if (dir == top || !under_top(dir.parent_path())) break;
    dir = dir.parent_path();
  }
  return smallest;
}

}  // namespace

std::optional<double> cgroup_v2_cpu_quota(std::string_view cpu_max) {
  cpu_max = cgroup_text_trimmed(cpu_max);
  const auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = cgroup_whole_number(cpu_max.substr(0, space));
  const auto period = cgroup_whole_number(cpu_max.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return double(*quota) / double(*period);
}

std::optional<double> cgroup_v1_cpu_quota(std::string_view quota_us,
                                          std::string_view period_us) {
  const auto quota = cgroup_whole_number(quota_us);
  const auto period = cgroup_whole_number(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return double(*quota) / double(*period);
}

CgroupQuota cgroup_cpu_quota(const std::string& root,
                             std::string_view proc_self_cgroup) {
  const fs::path base(root);
  CgroupQuota smallest;
  const auto keep = [&smallest](const CgroupQuota& found) {
    if (found.cpus && (!smallest.cpus || *found.cpus < *smallest.cpus))
      smallest = found;
  };
  for (const CgroupLine& line : cgroup_lines(proc_self_cgroup)) {
    if (line.controllers.empty()) {
      keep(smallest_quota(base, line.path, [](const fs::path& dir) {
        const fs::path file = dir / "cpu.max";
        const auto text = read_small_file(file);
        return CgroupQuota{text ? cgroup_v2_cpu_quota(*text) : std::nullopt,
                           file.string()};
      }));
    } else if (names_cpu_controller(line.controllers)) {
      for (const char* mount : {"cpu,cpuacct", "cpu", "cpuacct,cpu"}) {
        std::error_code ec;
        if (!fs::is_directory(base / mount, ec)) continue;
        keep(smallest_quota(base / mount, line.path, [](const fs::path& dir) {
          const fs::path file = dir / "cpu.cfs_quota_us";
          const auto quota = read_small_file(file);
          const auto period = read_small_file(dir / "cpu.cfs_period_us");
          return CgroupQuota{quota && period
                                 ? cgroup_v1_cpu_quota(*quota, *period)
                                 : std::nullopt,
                             file.string()};
        }));
        break;
      }
    }
  }
  return smallest;
}

UsableCpus usable_cpus() {
  UsableCpus cpus;
  cpus.affinity = affinity_cpus();
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const CgroupQuota quota = cgroup_cpu_quota("/sys/fs/cgroup", text.str());
  cpus.quota = quota.cpus;
  if (quota.cpus) cpus.quota_file = quota.file;
  return cpus;
}

int UsableCpus::count() const {
  int cpus = std::max(1, affinity);
  if (quota && *quota > 0)
    cpus = std::min(cpus, std::max(1, int(std::ceil(*quota - 1e-9))));
  return cpus;
}

std::string UsableCpus::describe() const {
  const std::string mask = fmt::format("{} CPU{} in its affinity mask",
                                       affinity, affinity == 1 ? "" : "s");
  if (!quota) return mask + ", no cgroup CPU quota";
  return fmt::format("{}, cgroup CPU quota {:.4g} CPUs ({})", mask, *quota,
                     quota_file);
}

ThreadChoice choose_compute_threads(int flag, const char* omp_num_threads,
                                    const UsableCpus& cpus) {
  if (flag > 0) return {flag, "--threads"};
  std::string ignored;
  if (omp_num_threads && *omp_num_threads) {
    // OpenMP reads the first entry of a nested list ("4,2").
    const std::string_view text(omp_num_threads);
    const auto first = cgroup_whole_number(text.substr(0, text.find(',')));
    if (first && *first >= 1 && *first <= 4096)
      return {int(*first), fmt::format("OMP_NUM_THREADS={}", *first)};
    ignored = fmt::format(
        " (OMP_NUM_THREADS=\"{}\" is not a count from 1 "
        "to 4096: ignored)",
        text.substr(0, 32));
  }
  return {cpus.count(),
          "the CPUs this process may run on: " + cpus.describe() + ignored};
}

}  // namespace mold
