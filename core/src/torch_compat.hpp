#pragma once
// The one place where mold adapts to libtorch versions: Debian 12's 1.13 (CPU)
// and the 2.x of GPU machines. Private to the core.

#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
// c10::Allocator::allocate became non-const and copy_data pure virtual in 2.3.
#  define MOLD_TORCH_ALLOCATOR_CONST
#  define MOLD_TORCH_ALLOCATOR_HAS_COPY_DATA 1
#else
#  define MOLD_TORCH_ALLOCATOR_CONST const
#  define MOLD_TORCH_ALLOCATOR_HAS_COPY_DATA 0
#endif
