#pragma once
/// Spatial tiles for VAE encode/decode, planned in latent units, and the
/// weights that blend their overlaps.

#include <string_view>
#include <vector>

namespace mold {

/// A tile in latent units, half-open: rows [y0, y1), columns [x0, x1).
struct Tile {
  int y0 = 0, y1 = 0, x0 = 0, x1 = 0;
};

struct TilePlan {
  int height = 0, width = 0;  ///< the latent's size
  int tile = 0;     ///< tile edge (a tile is smaller where the image is)
  int overlap = 0;  ///< rows/columns shared by neighbouring tiles
  std::vector<Tile> tiles;  ///< row-major
};

/// Tiles of `tile` x `tile` covering `height` x `width` with `overlap` shared
/// between neighbours (the last row and column of tiles end flush with the
/// image, so their overlap can be larger). One tile when the image fits. Throws
/// InvalidArgument when tile <= overlap or a size is not positive.
TilePlan plan_tiles(int height, int width, int tile, int overlap);

/// How a tile's weight rises across an overlap, t in (0, 1): linear t, or
/// smootherstep 6t^5 - 15t^4 + 10t^3 (flat at both ends, so no kink where the
/// overlap begins).
enum class Blend { linear, smootherstep };
double blend_ramp(Blend blend, double t);
std::string_view to_string(Blend blend);
/// "linear" or "smootherstep"; throws ParseError.
Blend parse_blend(std::string_view text);

}  // namespace mold
