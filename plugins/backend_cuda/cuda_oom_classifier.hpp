#pragma once
// Recognises out-of-memory texts of CUDA and HIP/ROCm stacks: PyTorch's caching
// allocator (both message formats), the CUDA runtime and driver, cuBLAS, cuDNN,
// candle and ggml.

#include <mold/oom.hpp>
#include <optional>

namespace mold::backend_cuda {

std::optional<OomReport> classify_cuda_oom(const ErrorContext& error);

}  // namespace mold::backend_cuda
