#pragma once
// Recognises out-of-memory texts of Apple GPUs: PyTorch's MPS allocator, Metal
// command buffer errors (as Metal, ggml and MLX print them), MLX's and ggml's
// buffer limits.

#include <mold/oom/oom.hpp>
#include <optional>

namespace backend_metal {

std::optional<mold::OomReport> classify_metal_oom(
    const mold::ErrorContext& error);

}  // namespace backend_metal
