#pragma once
/// The one place where mold adapts to libtorch versions: Debian 12's 1.13 (CPU)
/// and the 2.x of GPU machines. The version is the one the core was built
/// against (build_config.hpp); plugins must match it (the build id checks), so
/// the same switch holds for them. Needs no libtorch header itself.

#include "mold/base/build_config.hpp"

#define MOLD_TORCH_AT_LEAST(major, minor)  \
  (MOLD_TORCH_VERSION_MAJOR > (major) ||   \
   (MOLD_TORCH_VERSION_MAJOR == (major) && \
    MOLD_TORCH_VERSION_MINOR >= (minor)))

#if MOLD_TORCH_AT_LEAST(2, 3)
// c10::Allocator::allocate became non-const and copy_data pure virtual in 2.3.
#  define MOLD_TORCH_ALLOCATOR_CONST
#  define MOLD_TORCH_ALLOCATOR_HAS_COPY_DATA 1
#else
#  define MOLD_TORCH_ALLOCATOR_CONST const
#  define MOLD_TORCH_ALLOCATOR_HAS_COPY_DATA 0
#endif
