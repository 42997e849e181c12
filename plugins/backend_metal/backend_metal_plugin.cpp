// backend_metal: registers the Metal/MPS OOM classifier on every platform.

#include <mold/plugin.hpp>

#include "metal_oom_classifier.hpp"

namespace {

void register_all(mold::Registrar& registrar) {
  registrar.add_classifier("metal", mold::backend_metal::classify_metal_oom);
}

}  // namespace

MOLD_PLUGIN("backend_metal", "0.1.0", register_all)
