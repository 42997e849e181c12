#include "mold/runtime/phase_event.hpp"

namespace mold {

std::string_view to_string(PhaseStage stage) {
  switch (stage) {
  case PhaseStage::start:
    return "start";
  case PhaseStage::step:
    return "step";
  case PhaseStage::done:
    return "done";
  case PhaseStage::failed:
    return "failed";
  case PhaseStage::reused:
    return "reused";
  }
  return "?";
}

}  // namespace mold
