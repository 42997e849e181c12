#include "mold/plan/tile_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mold/base/error.hpp"

namespace mold {

namespace {
std::vector<std::pair<int, int>> spans(int size, int tile, int overlap) {
  if (size <= tile) return {{0, size}};
  std::vector<std::pair<int, int>> out;
  const int stride = tile - overlap;
  for (int start = 0;; start += stride) {
    if (start + tile >= size) {
      out.emplace_back(size - tile, size);
      break;
    }
    out.emplace_back(start, start + tile);
  }
  return out;
}
}  // namespace

TilePlan plan_tiles(int height, int width, int tile, int overlap) {
  if (height <= 0 || width <= 0)
    throw InvalidArgument(
        fmt::format("cannot tile a {}x{} latent", height, width));
  if (tile <= 0 || overlap < 0 || overlap >= tile)
    throw InvalidArgument(
        fmt::format("tile {} with overlap {}: the tile must be positive and "
                    "larger than the overlap",
                    tile, overlap));
  TilePlan plan{height, width, tile, overlap, {}};
  for (const auto& [y0, y1] : spans(height, tile, overlap))
    for (const auto& [x0, x1] : spans(width, tile, overlap))
      plan.tiles.push_back({y0, y1, x0, x1});
  return plan;
}

double blend_ramp(Blend blend, double t) {
  t = std::clamp(t, 0.0, 1.0);
  if (blend == Blend::linear) return t;
  return t * t * t * (t * (6 * t - 15) + 10);
}

std::string_view to_string(Blend blend) {
  return blend == Blend::linear ? "linear" : "smootherstep";
}

Blend parse_blend(std::string_view text) {
  if (text == "linear") return Blend::linear;
  if (text == "smootherstep") return Blend::smootherstep;
  throw ParseError(
      fmt::format("unknown blend '{}': use linear or smootherstep", text));
}

}  // namespace mold
