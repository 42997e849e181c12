#pragma once
// The `cuda` Backend: device memory from the CUDA runtime, and from PyTorch's
// caching allocator when libtorch was built with CUDA.

#include <memory>
#include <mold/backend.hpp>

namespace mold::backend_cuda {

/// The backend for CUDA device `index`. Throws mold::Error when no usable
/// device exists.
std::shared_ptr<Backend> make_cuda_backend(int index = 0);

}  // namespace mold::backend_cuda
