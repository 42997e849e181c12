#pragma once
// Recognises out-of-memory texts of CUDA and HIP/ROCm stacks: PyTorch's caching
// allocator (every message format since 1.0), the CUDA and HIP runtimes and
// drivers, cuBLAS, cuDNN, hipBLAS, MIOpen, candle, ggml/llama.cpp and
// TensorFlow's stream executor.

#include <mold/oom/oom.hpp>
#include <optional>

namespace backend_cuda {

/// Texts with a CUDA or HIP OOM marker of their own (kSpecificClassifier).
std::optional<mold::OomReport> classify_cuda_oom(
    const mold::ErrorContext& error);

/// Texts that say "out of memory" and name CUDA or HIP without a marker of
/// their own: "CUDA error 2 at ggml-cuda.cu:5509: out of memory", ComfyUI's
/// "Allocation on device", TensorFlow's "OOM when allocating tensor ...
/// device:GPU:0" (kInferringClassifier).
std::optional<mold::OomReport> classify_cuda_oom_inferred(
    const mold::ErrorContext& error);

}  // namespace backend_cuda
