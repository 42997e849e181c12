// backend_metal: registers the Metal/MPS OOM classifier and the advice for MPS
// OOMs on every platform (a Linux server must still read a Mac client's
// report).

#include <mold/plugin/plugin.hpp>

#include "metal_oom_classifier.hpp"
#include "metal_oom_hints.hpp"

namespace {

void register_all(mold::Registrar& registrar) {
  registrar.add_classifier("metal", backend_metal::classify_metal_oom);
  registrar.add_hint_provider("mps", backend_metal::mps_oom_hints);
}

}  // namespace

MOLD_PLUGIN("backend_metal", "0.1.0", register_all)
