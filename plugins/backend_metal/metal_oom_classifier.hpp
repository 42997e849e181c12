#pragma once
// Recognises out-of-memory texts of Apple GPUs: PyTorch's MPS allocator and
// Metal command buffer errors.

#include <mold/oom.hpp>
#include <optional>

namespace mold::backend_metal {

std::optional<OomReport> classify_metal_oom(const ErrorContext& error);

}  // namespace mold::backend_metal
