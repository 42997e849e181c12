#pragma once
// The OOM classifiers the core keeps itself: host memory (its own cpu backend,
// libtorch's CPU allocator, the C++ and Python runtimes, numpy, the kernel's
// OOM killer, the JVM), and a generic fallback for texts no plugin recognised.

#include <optional>

#include "mold/oom/oom.hpp"

namespace mold {

/// Host memory ran out (kSpecificClassifier).
std::optional<OomReport> classify_cpu_oom(const ErrorContext& error);

/// PyTorch XPU (Intel GPUs): "XPU out of memory. Tried to allocate ...", and
/// IPEX's "Current platform can NOT allocate memory block with size larger than
/// 4GB!" (kSpecificClassifier).
std::optional<OomReport> classify_xpu_oom(const ErrorContext& error);

/// Any other out-of-memory text: "out of memory" as words, Vulkan's
/// ErrorOutOfDeviceMemory, OpenCL's CL_MEM_OBJECT_ALLOCATION_FAILURE, XLA's
/// RESOURCE_EXHAUSTED, onnxruntime's arena, DirectML, "OOM" as a word. The
/// backend is the origin's, else "unknown" (kFallbackClassifier).
std::optional<OomReport> classify_generic_oom(const ErrorContext& error);

}  // namespace mold
