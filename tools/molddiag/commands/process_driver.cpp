#include "process_driver.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/profile/process_sampler.hpp>
#include <thread>

namespace molddiag {

namespace {

/// Runs `command` by /bin/sh -c in its own process group, its output sent to
/// our stderr (stdout stays the report's). Returns its exit status; throws
/// on a timeout, after killing the group.
int run_shell(const std::string& command, int timeout_seconds) {
  const pid_t child = fork();
  if (child < 0)
    throw mold::Error(fmt::format("cannot start --each: fork failed"));
  if (child == 0) {
    setpgid(0, 0);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(child, child);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      throw mold::Error(fmt::format(
          "--each did not finish within {} s; it was killed (raise --timeout "
          "if one request takes longer)",
          timeout_seconds));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

mold::MemoryProfile run_process_profile(const ProcessRun& r) {
  const mold::ProcessSampler sampler(r.pid);
  mold::MemoryProfile p;
  p.driver = "process";
  p.subject =
      fmt::format("pid {}{}", r.pid,
                  sampler.command().empty() ? std::string()
                                            : " (" + sampler.command() + ")");
  p.backend = sampler.has_gpu() ? "cuda" : "";
  p.device =
      sampler.has_gpu() ? sampler.gpu_name() : "host memory only (no NVML)";
  if (!r.quiet)
    std::cerr << fmt::format(
        "molddiag: {} runs of --each, sampling {}; GPU memory: {}\n", r.images,
        p.subject,
        sampler.has_gpu() ? "from NVML" : "not sampled (no libnvidia-ml.so.1)");
  for (int i = 0; i < r.images; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const int status = run_shell(r.each, r.timeout_seconds);
    if (status != 0)
      throw mold::Error(fmt::format(
          "--each exited with status {} on run {} of {}: the profile needs "
          "every request to succeed (its output is above)",
          status, i + 1, r.images));
    std::this_thread::sleep_for(
        std::chrono::duration<double>(r.settle_seconds));
    const mold::ProcessMemory m = sampler.sample();
    mold::ImageSample s;
    s.image = i;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              started)
                    .count();
    s.after.host_rss = m.rss;
    // The driver's figure for the process includes its allocator's cache: it
    // is counted as both allocated and reserved (a black box says no more).
    s.after.allocated = s.after.reserved = s.after.peak_allocated =
        m.gpu.value_or(0);
    p.images.push_back(s);
    if (!r.quiet)
      std::cerr << fmt::format(
          "[{}/{}] RSS {}{}, {:.1f} s\n", i + 1, r.images,
          mold::format_bytes(m.rss),
          m.gpu ? ", GPU " + mold::format_bytes(*m.gpu) : std::string(),
          s.seconds);
  }
  return p;
}

}  // namespace molddiag
