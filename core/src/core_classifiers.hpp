#pragma once
// The OOM classifiers the core keeps itself: its own cpu backend, and a generic
// fallback for texts no plugin recognised.

#include <optional>

#include "mold/oom.hpp"

namespace mold {

/// "CPU out of memory. Tried to allocate X. Limit L, of which F is free." (the
/// cpu backend's own text), libtorch's "DefaultCPUAllocator: can't allocate
/// memory: you tried to allocate N bytes", and std::bad_alloc.
std::optional<OomReport> classify_cpu_oom(const ErrorContext& error);

/// Any other "out of memory" text (Vulkan's ErrorOutOfDeviceMemory, ...):
/// backend unknown unless the origin names it.
std::optional<OomReport> classify_generic_oom(const ErrorContext& error);

}  // namespace mold
