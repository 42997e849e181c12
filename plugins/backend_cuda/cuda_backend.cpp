#include "cuda_backend.hpp"

#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <mold/base/error.hpp>
#include <string>

#if MOLD_TORCH_HAS_CUDA
#  include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace backend_cuda {

using mold::Backend;
using mold::Error;
using mold::InvalidArgument;
using mold::MemoryStats;
using mold::read_host_rss;

namespace {

void check(cudaError_t status, const char* what, int device) {
  if (status == cudaSuccess) return;
  throw Error(std::string(what) + " failed on CUDA device " +
              std::to_string(device) + ": " + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) + ")");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index) : index_(index) {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, index_), "cudaGetDeviceProperties",
          index_);
    device_name_ = props.name;
#if MOLD_TORCH_HAS_CUDA
    // libtorch sets its caching allocator up lazily, at the first CUDA tensor;
    // its statistics are asked for before that (the plan), which fails
    // ("Invalid device argument") until it is set up. Setting it up for every
    // device is idempotent.
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", index_);
    c10::cuda::CUDACachingAllocator::init(count);
#endif
  }

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }

  MemoryStats stats() const override {
    check(cudaSetDevice(index_), "cudaSetDevice", index_);
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", index_);
    MemoryStats s;
    s.total = total;
    s.free = free;
#if MOLD_TORCH_HAS_CUDA
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        static_cast<c10::DeviceIndex>(index_));
    s.allocated = stats.allocated_bytes[0].current;
    s.reserved = stats.reserved_bytes[0].current;
    s.peak_allocated = stats.allocated_bytes[0].peak;
    s.peak_reserved = stats.reserved_bytes[0].peak;
    s.inactive_split = stats.inactive_split_bytes[0].current;
    s.alloc_retries = std::uint64_t(stats.num_alloc_retries);
    s.ooms = std::uint64_t(stats.num_ooms);
#else
    // Without libtorch's allocator, all the device knows is what is in use, by
    // anyone.
    s.allocated = total - free;
    s.reserved = s.allocated;
    s.peak_allocated = s.allocated;
    s.peak_reserved = s.allocated;
#endif
    s.device_used = total - free;
    s.host_rss = read_host_rss();
    return s;
  }

  void reset_peak() override {
#if MOLD_TORCH_HAS_CUDA
    c10::cuda::CUDACachingAllocator::resetPeakStats(
        static_cast<c10::DeviceIndex>(index_));
#endif
  }

  void empty_cache() override {
#if MOLD_TORCH_HAS_CUDA
    c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  }

  void synchronize_and_check() override {
    check(cudaSetDevice(index_), "cudaSetDevice", index_);
    check(cudaDeviceSynchronize(),
          "cudaDeviceSynchronize (a queued kernel failed)", index_);
    check(cudaGetLastError(), "a CUDA launch", index_);
  }

  c10::Device torch_device() const override {
    return c10::Device(c10::DeviceType::CUDA,
                       static_cast<c10::DeviceIndex>(index_));
  }

 private:
  int index_;
  std::string device_name_;
};

}  // namespace

std::shared_ptr<Backend> make_cuda_backend(int index) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw Error(
        std::string("no CUDA device is usable: cudaGetDeviceCount says ") +
        (status == cudaSuccess ? "0 devices" : cudaGetErrorString(status)) +
        ". Check the driver with nvidia-smi, or use --backend cpu");
  if (index < 0 || index >= count)
    throw InvalidArgument("CUDA device " + std::to_string(index) +
                          " does not exist: " + std::to_string(count) +
                          " device(s) present");
  return std::make_shared<CudaBackend>(index);
}

}  // namespace backend_cuda
