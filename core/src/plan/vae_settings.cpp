#include "mold/plan/vae_settings.hpp"

#include <fmt/format.h>

#include "mold/base/error.hpp"

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

}  // namespace mold
