#pragma once
// The `cuda` mold::Backend: device memory from the CUDA runtime, and from
// PyTorch's caching allocator when libtorch was built with CUDA.

#include <memory>
#include <mold/device/backend.hpp>

namespace backend_cuda {

/// The backend for CUDA device `index`. Throws mold::Error when no usable
/// device exists.
std::shared_ptr<mold::Backend> make_cuda_backend(int index = 0);

}  // namespace backend_cuda
