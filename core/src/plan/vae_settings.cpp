#include "mold/plan/vae_settings.hpp"

#include <fmt/format.h>

#include <algorithm>

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

std::vector<Workload> vae_fallback_workloads(const Workload& whole,
                                             Bytes workspace_bound) {
  std::vector<Workload> rungs;
  if (whole.op != ops::kVaeDecode && whole.op != ops::kVaeEncode) return rungs;
  if (whole.tile > 0 || whole.attention_bound > 0) return rungs;
  Workload bounded = whole;
  bounded.attention_bound = workspace_bound;
  rungs.push_back(bounded);
  // A tile rung as large as the latent is the whole again. Both families'
  // VAEs have 8 pixels a latent unit (a larger scale only keeps a rung the
  // estimator then caps at the image's size).
  constexpr int kPixelsPerLatent = 8;
  const int latent = std::max(whole.width, whole.height) / kPixelsPerLatent;
  for (const int tile : kLadderTiles) {
    if (tile >= latent) continue;
    Workload tiled = whole;
    tiled.tile = tile;
    rungs.push_back(tiled);
  }
  return rungs;
}

}  // namespace mold
