#include "mold/plan/vae_settings.hpp"

#include <fmt/format.h>

#include "mold/base/error.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

std::string_view to_string(VaeMode mode) {
  switch (mode) {
  case VaeMode::whole:
    return "whole";
  case VaeMode::bounded:
    return "bounded";
  case VaeMode::tiled:
    return "tiled";
  case VaeMode::ladder:
    return "ladder";
  }
  return "unknown";
}

VaeMode parse_vae_mode(std::string_view text) {
  for (auto m :
       {VaeMode::whole, VaeMode::bounded, VaeMode::tiled, VaeMode::ladder})
    if (to_string(m) == text) return m;
  throw ParseError(fmt::format(
      "unknown mode '{}': use whole, bounded, tiled or ladder", text));
}

std::optional<Workload> bounded_vae_workload(const Workload& whole,
                                             Bytes workspace_bound) {
  if (whole.op != ops::kVaeDecode && whole.op != ops::kVaeEncode)
    return std::nullopt;
  if (whole.tile > 0 || whole.attention_bound > 0) return std::nullopt;
  Workload bounded = whole;
  bounded.attention_bound = workspace_bound;
  return bounded;
}

}  // namespace mold
