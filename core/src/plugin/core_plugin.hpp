#pragma once
// What the core registers itself, through a Registrar like any plugin: the cpu
// backend and its hints, and the OOM classifiers for host memory, XPU and the
// generic fallback.

#include "mold/plugin/registrar.hpp"

namespace mold {

void register_core_plugin(Registrar& registrar);

}  // namespace mold
