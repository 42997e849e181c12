#pragma once
/// The black-box driver's samples: another process's memory, as the kernel and
/// (when the NVIDIA driver is there) NVML report it, so that users of any
/// generation server (ComfyUI, InvokeAI, mold serve) can profile it from the
/// outside: `molddiag leak --pid PID --each COMMAND`.

#include <sys/types.h>

#include <optional>
#include <string>

#include "mold/base/bytes.hpp"

namespace mold {

/// One sample of a process.
struct ProcessMemory {
  Bytes rss = 0;             ///< VmRSS of /proc/PID/status
  Bytes peak_rss = 0;        ///< VmHWM
  std::optional<Bytes> gpu;  ///< its GPU memory over all devices (NVML)
};

/// Reads /proc/PID and, where libnvidia-ml.so.1 loads (at run time: no build
/// dependency), the process's GPU memory from NVML.
class ProcessSampler {
 public:
  /// Throws NotFound naming the pid when no such process is visible.
  explicit ProcessSampler(pid_t pid);
  ~ProcessSampler();
  ProcessSampler(const ProcessSampler&) = delete;
  ProcessSampler& operator=(const ProcessSampler&) = delete;

  pid_t pid() const { return pid_; }
  /// The process's command line (for the report), "" when unreadable.
  const std::string& command() const { return command_; }
  /// Whether NVML was found and answers.
  bool has_gpu() const;
  /// "NVIDIA H200" (the first device) with NVML, "" without.
  std::string gpu_name() const;
  /// Throws NotFound when the process has gone.
  ProcessMemory sample() const;

 private:
  struct Nvml;
  pid_t pid_;
  std::string command_;
  Nvml* nvml_ = nullptr;
};

}  // namespace mold
