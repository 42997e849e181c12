#pragma once
/// The black-box driver of molddiag leak: runs a command N times (a request to
/// any generation server, e.g. a curl) and samples another process after
/// each: its resident set from /proc and, where the NVIDIA driver's NVML is
/// present, its GPU memory. Torch-free.

#include <sys/types.h>

#include <mold/profile/memory_profile.hpp>
#include <string>

namespace molddiag {

struct ProcessRun {
  pid_t pid = 0;
  std::string each;  ///< the command, run by /bin/sh -c
  int images = 12;
  double settle_seconds = 0.5;  ///< wait after each command before sampling
  int timeout_seconds = 600;    ///< per command
  bool quiet = false;
};

/// Throws mold::NotFound when the process is not there or goes away, and
/// mold::Error naming the run when the command fails or times out (its
/// process group is killed).
mold::MemoryProfile run_process_profile(const ProcessRun& run);

}  // namespace molddiag
