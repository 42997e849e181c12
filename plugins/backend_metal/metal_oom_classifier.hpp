#pragma once
// Recognises out-of-memory texts of Apple GPUs: PyTorch's MPS allocator, Metal
// command buffer errors (as Metal, ggml and MLX print them), MLX's and ggml's
// buffer limits.

#include <mold/oom.hpp>
#include <optional>

namespace mold::backend_metal {

std::optional<OomReport> classify_metal_oom(const ErrorContext& error);

}  // namespace mold::backend_metal
