#include "cuda_oom_classifier.hpp"

#include <array>
#include <cctype>
#include <mold/oom_text.hpp>
#include <string>
#include <string_view>

namespace mold::backend_cuda {

namespace {

constexpr std::array<std::string_view, 10> kRuntimeMarkers{
    "CUDA error: out of memory",   "cudaErrorMemoryAllocation",
    "CUDA_ERROR_OUT_OF_MEMORY",    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",   "cudaMalloc failed: out of memory",
    "HIP error: out of memory",    "hipErrorOutOfMemory",
    "HIPBLAS_STATUS_ALLOC_FAILED", "MIOPEN_STATUS_ALLOC_FAILED",
};

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// ggml: "failed to allocate CUDA0 buffer of size 123456789"
bool ggml_buffer_failure(std::string_view text) {
  const auto at = text.find("failed to allocate CUDA");
  if (at == std::string_view::npos) return false;
  std::size_t i = at + 23;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  return text.substr(i, 16) == " buffer of size ";
}

std::string gpu_device(std::string_view text) {
  const auto at = text.find("GPU ");
  if (at == std::string_view::npos) return {};
  std::size_t end = at + 4;
  while (end < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[end])))
    ++end;
  return end > at + 4 ? std::string(text.substr(at, end - at)) : std::string();
}

}  // namespace

std::optional<OomReport> classify_cuda_oom(const ErrorContext& error) {
  const std::string_view text = error.message;
  const bool torch_cuda = contains(text, "CUDA out of memory.");
  const bool torch_hip = contains(text, "HIP out of memory.");
  bool runtime = ggml_buffer_failure(text);
  for (auto marker : kRuntimeMarkers)
    runtime = runtime || contains(text, marker);
  if (!torch_cuda && !torch_hip && !runtime) return std::nullopt;

  OomReport report;
  const bool hip_text = torch_hip || contains(text, "HIP error") ||
                        contains(text, "hipError") ||
                        contains(text, "HIPBLAS") || contains(text, "MIOPEN");
  report.backend = hip_text ? "rocm" : "cuda";
  // Where the error happened decides: PyTorch on ROCm prints "CUDA out of
  // memory", and candle reports Metal allocation failures as
  // CUDA_ERROR_OUT_OF_MEMORY.
  if (error.origin.backend == "rocm") report.backend = "rocm";
  if (error.origin.backend == "metal" &&
      contains(text, "CUDA_ERROR_OUT_OF_MEMORY"))
    report.backend = "metal";
  report.device = gpu_device(text);
  report.origin = error.origin;
  report.raw_message = error.message;
  report.message = strip_backtrace(text);

  report.requested = bytes_after(text, "Tried to allocate ");
  if (!report.requested)
    report.requested = bytes_after(text, " buffer of size ");
  if (!report.requested) report.requested = bytes_after(text, "allocating ");

  if (contains(text, "total capacity of") ||
      contains(text, "total capacty of")) {
    // PyTorch >= 2.1: "GPU 0 has a total capacity of 44.98 GiB of which 3.69
    // GiB is free.
    // ... Of the allocated memory 38.1 GiB is allocated by PyTorch, and 2.48
    // GiB is reserved by PyTorch but unallocated."
    report.capacity = bytes_after(text, "total capacity of ");
    if (!report.capacity)
      report.capacity = bytes_after(text, "total capacty of ");
    report.free = bytes_before(text, " is free");
    report.allocated = bytes_before(text, " is allocated by PyTorch");
    report.reserved_unallocated =
        bytes_before(text, " is reserved by PyTorch but unallocated");
  } else if (contains(text, " total capacity;")) {
    // PyTorch < 2.1: "(GPU 0; 7.79 GiB total capacity; 5.47 GiB already
    // allocated; 1.2 GiB free; 6.02 GiB reserved in total by PyTorch)"
    report.capacity = bytes_before(text, " total capacity;");
    report.allocated = bytes_before(text, " already allocated");
    report.free = bytes_before(text, " free;");
    const auto reserved = bytes_before(text, " reserved in total by PyTorch");
    if (reserved && report.allocated && *reserved >= *report.allocated)
      report.reserved_unallocated = *reserved - *report.allocated;
  }
  if (report.reserved_unallocated && report.requested) {
    const Bytes ru = *report.reserved_unallocated;
    report.fragmentation = ru >= *report.requested ||
                           (report.capacity && ru * 5 >= *report.capacity);
  }
  return report;
}

}  // namespace mold::backend_cuda
