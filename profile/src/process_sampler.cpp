#include "mold/profile/process_sampler.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "mold/base/error.hpp"

namespace mold {

namespace {

constexpr int kNvmlInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE

/// VmRSS and VmHWM of /proc/PID/status; false when it cannot be read.
bool read_status(pid_t pid, ProcessMemory& m) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  if (!in) return false;
  std::string key;
  bool found = false;
  while (in >> key) {
    if (key == "VmRSS:" || key == "VmHWM:") {
      Bytes kib = 0;
      in >> kib;
      (key == "VmRSS:" ? m.rss : m.peak_rss) = kib * kKiB;
      found = true;
    }
    in.ignore(1 << 20, '\n');
  }
  return found;
}

}  // namespace

// The few NVML entry points used, resolved from libnvidia-ml.so.1 at run time
// (NVML's C API: nvml.h, NVIDIA's public documentation).
struct ProcessSampler::Nvml {
  struct ProcessInfo {  // nvmlProcessInfo_v1_t
    unsigned int pid;
    unsigned long long usedGpuMemory;
  };
  using Init = int (*)();
  using Shutdown = int (*)();
  using Count = int (*)(unsigned int*);
  using Handle = int (*)(unsigned int, void**);
  using Name = int (*)(void*, char*, unsigned int);
  using Processes = int (*)(void*, unsigned int*, ProcessInfo*);

  void* library = nullptr;
  Shutdown shutdown = nullptr;
  Count count = nullptr;
  Handle handle = nullptr;
  Name name = nullptr;
  Processes processes = nullptr;

  static Nvml* open() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto* n = new Nvml;
    n->library = lib;
    auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    n->shutdown = reinterpret_cast<Shutdown>(dlsym(lib, "nvmlShutdown"));
    n->count = reinterpret_cast<Count>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    n->handle =
        reinterpret_cast<Handle>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    n->name = reinterpret_cast<Name>(dlsym(lib, "nvmlDeviceGetName"));
    // The v1 struct layout: {pid, usedGpuMemory}.
    n->processes = reinterpret_cast<Processes>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses"));
    if (!init || !n->shutdown || !n->count || !n->handle || !n->processes ||
        init() != 0) {
      dlclose(lib);
      delete n;
      return nullptr;
    }
    return n;
  }
  ~Nvml() {
    if (shutdown) shutdown();
    if (library) dlclose(library);
  }
};

ProcessSampler::ProcessSampler(pid_t pid) : pid_(pid) {
  ProcessMemory probe;
  if (pid <= 0 || !read_status(pid, probe))
    throw NotFound(fmt::format(
        "--pid {}: no such process is visible here (is it running, and is "
        "/proc/{}/status readable by this user?)",
        pid, pid));
  std::ifstream cmdline(fmt::format("/proc/{}/cmdline", pid));
  std::string arg;
  while (std::getline(cmdline, arg, '\0'))
    command_ += (command_.empty() ? "" : " ") + arg;
  nvml_ = Nvml::open();
}

ProcessSampler::~ProcessSampler() { delete nvml_; }

bool ProcessSampler::has_gpu() const { return nvml_ != nullptr; }

std::string ProcessSampler::gpu_name() const {
  if (!nvml_ || !nvml_->name) return "";
  void* device = nullptr;
  char name[96] = {};
  if (nvml_->handle(0, &device) != 0 ||
      nvml_->name(device, name, sizeof name) != 0)
    return "";
  return name;
}

ProcessMemory ProcessSampler::sample() const {
  ProcessMemory m;
  if (!read_status(pid_, m))
    throw NotFound(fmt::format("process {} has gone", pid_));
  if (nvml_) {
    unsigned int devices = 0;
    if (nvml_->count(&devices) == 0) {
      Bytes total = 0;
      for (unsigned int d = 0; d < devices; ++d) {
        void* device = nullptr;
        if (nvml_->handle(d, &device) != 0) continue;
        std::vector<Nvml::ProcessInfo> infos(64);
        unsigned int n = unsigned(infos.size());
        int status = nvml_->processes(device, &n, infos.data());
        if (status == kNvmlInsufficientSize && n > infos.size()) {
          infos.resize(n + 8);
          n = unsigned(infos.size());
          status = nvml_->processes(device, &n, infos.data());
        }
        if (status != 0) continue;
        for (unsigned int i = 0; i < n && i < infos.size(); ++i)
          if (pid_t(infos[i].pid) == pid_) total += infos[i].usedGpuMemory;
      }
      m.gpu = total;
    }
  }
  return m;
}

}  // namespace mold
