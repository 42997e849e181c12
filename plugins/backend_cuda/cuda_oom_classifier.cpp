#include "cuda_oom_classifier.hpp"

#include <array>
#include <cctype>
#include <mold/oom/oom_text.hpp>
#include <string>
#include <string_view>

namespace backend_cuda {

using mold::bytes_after;
using mold::bytes_before;
using mold::collapse_whitespace;
using mold::contains_nocase;
using mold::ErrorContext;
using mold::OomReport;
using mold::read_pytorch_allocator_numbers;
using mold::start_report;

namespace {

constexpr std::array<std::string_view, 10> kCudaMarkers{
    "CUDA out of memory.",
    "CUDA error: out of memory",
    "CUDA driver error: out of memory",
    "cudaErrorMemoryAllocation",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "cudaMalloc failed: out of memory",
    "cudaErrorMemoryAllocation",
    "cudaMallocAsync failed: out of memory",
};

constexpr std::array<std::string_view, 8> kHipMarkers{
    "HIP out of memory.",
    "HIP error: out of memory",
    "hipErrorOutOfMemory",
    "HIP_ERROR_OutOfMemory",
    "HIPBLAS_STATUS_ALLOC_FAILED",
    "MIOPEN_STATUS_ALLOC_FAILED",
    "hipError_t(1002)",
    "hipErrorMemoryAllocation",
};

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

template <std::size_t N>
bool contains_any(std::string_view text,
                  const std::array<std::string_view, N>& needles) {
  for (auto n : needles)
    if (contains(text, n)) return true;
  return false;
}

/// ggml: "failed to allocate CUDA0 buffer of size N" / "ROCm0 buffer"; returns
/// the backend the buffer type names, or empty.
std::string ggml_buffer_backend(std::string_view text) {
  for (auto [prefix, backend] :
       {std::pair<std::string_view, const char*>{"CUDA", "cuda"},
        {"ROCm", "rocm"}}) {
    std::string marker = "failed to allocate " + std::string(prefix);
    std::size_t at = text.find(marker);
    while (at != std::string_view::npos) {
      std::size_t i = at + marker.size();
      while (i < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[i])))
        ++i;
      if (text.substr(i, 16) == " buffer of size ") return backend;
      at = text.find(marker, at + 1);
    }
  }
  return {};
}

/// A ROCm text: HIP markers, or the names ROCm builds leave in otherwise
/// CUDA-worded messages ("ROCm0", "rocm_driver", "-rocm", "hip.hpp").
bool mentions_rocm(std::string_view text) {
  return contains_any(text, kHipMarkers) || contains_nocase(text, "rocm") ||
         contains(text, "HIP error") || contains(text, "hipError") ||
         contains(text, "Hip") || contains(text, "hip.hpp");
}

OomReport report_for(const ErrorContext& error, const std::string& flat,
                     bool rocm) {
  OomReport report = start_report(error, rocm ? "rocm" : "cuda");
  // Where the error happened decides: PyTorch on ROCm prints "CUDA out of
  // memory", and candle reports Metal allocation failures as
  // CUDA_ERROR_OUT_OF_MEMORY.
  if (error.origin.backend == "rocm") report.backend = "rocm";
  if (error.origin.backend == "metal" &&
      contains(flat, "CUDA_ERROR_OUT_OF_MEMORY"))
    report.backend = "metal";

  read_pytorch_allocator_numbers(flat, report);
  // ggml prints the exact size after a rounded one: prefer it.
  if (auto exact = bytes_after(flat, " buffer of size "))
    report.requested = exact;
  // TensorFlow: "failed to allocate 32.00M (33554432 bytes) from device"
  if (!report.requested) report.requested = bytes_before(flat, ") from device");
  if (!report.requested)
    report.requested = bytes_after(flat, "failed to allocate ");
  if (!report.requested) report.requested = bytes_after(flat, "allocating ");
  if (report.device.empty()) {
    if (const auto at = flat.find("on device "); at != std::string::npos) {
      std::size_t end = at + 10;
      while (end < flat.size() &&
             std::isdigit(static_cast<unsigned char>(flat[end])))
        ++end;
      if (end > at + 10)
        report.device = "GPU " + flat.substr(at + 10, end - at - 10);
    }
  }
  return report;
}

// PyTorch's cudaMallocAsync allocator, as ComfyUI shows it:
// "torch.OutOfMemoryError: Allocation on device" with nothing after it on the
// line.
bool async_allocator_oom(std::string_view raw, std::string_view flat) {
  if (contains(flat, "Allocation on device") &&
      (contains(flat, "OutOfMemoryError") || contains(flat, "OOM")))
    return true;
  for (auto at = raw.find("Allocation on device"); at != std::string_view::npos;
       at = raw.find("Allocation on device", at + 1)) {
    std::size_t i = at + 20;
    while (i < raw.size() &&
           (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r'))
      ++i;
    if (i == raw.size() || raw[i] == '\n') return true;
  }
  return false;
}

}  // namespace

std::optional<OomReport> classify_cuda_oom(const ErrorContext& error) {
  const std::string flat = collapse_whitespace(error.message);
  const std::string ggml = ggml_buffer_backend(flat);
  const bool hip = contains_any(flat, kHipMarkers);
  const bool cuda = contains_any(flat, kCudaMarkers);
  if (!hip && !cuda && ggml.empty()) return std::nullopt;
  const bool rocm = hip || ggml == "rocm" || (cuda && mentions_rocm(flat));
  return report_for(error, flat, rocm);
}

std::optional<OomReport> classify_cuda_oom_inferred(const ErrorContext& error) {
  const std::string flat = collapse_whitespace(error.message);
  const bool async_allocator = async_allocator_oom(error.message, flat);
  // PyTorch < 2.1 without its first sentence: "Tried to allocate 20.00 MiB (GPU
  // 0; 1.96 GiB total capacity; 1.24 GiB already allocated; ..." (XPU texts say
  // "XPU" and are claimed first by the core's xpu classifier).
  const bool old_allocator_text = contains(flat, "Tried to allocate") &&
                                  contains(flat, " total capacity;") &&
                                  contains(flat, "already allocated");
  // The allocator builds its OOM message with NVML; a failed query asserts
  // there, and that assert only fires while an OOM is being reported.
  const bool nvml_during_oom =
      contains(flat, "NVML_SUCCESS == r INTERNAL ASSERT FAILED") &&
      contains(flat, "CUDACachingAllocator");
  // TensorFlow's BFC allocator on a GPU.
  const bool tf_gpu =
      contains(flat, "OOM when allocating tensor") &&
      (contains(flat, "device:GPU") || contains(flat, "GPU_0_bfc"));
  const bool says_oom = contains_nocase(flat, "out of memory") &&
                        !contains(flat, "this is not a failure");
  const bool names_gpu_stack =
      contains_nocase(flat, "cuda") || mentions_rocm(flat);
  if (!async_allocator && !old_allocator_text && !nvml_during_oom && !tf_gpu &&
      !(says_oom && names_gpu_stack))
    return std::nullopt;
  return report_for(error, flat, mentions_rocm(flat));
}

}  // namespace backend_cuda
