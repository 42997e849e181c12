#pragma once
// Source images for the edit models' tests: small RGB PNGs with a gradient
// (not flat, so the encoders see something), written where a test says.

#include <algorithm>
#include <cstdint>
#include <mold/runtime/png.hpp>
#include <string>
#include <vector>

namespace mold::test {

/// Writes `dir`/`name`, a w x h RGB PNG: red grows to the right, green
/// downwards, blue with x * y. Returns its path.
inline std::string write_source_png(const std::string& dir,
                                    const std::string& name, int w, int h) {
  std::vector<std::uint8_t> rgb;
  rgb.reserve(std::size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      rgb.push_back(std::uint8_t(x * 255 / std::max(1, w - 1)));
      rgb.push_back(std::uint8_t(y * 255 / std::max(1, h - 1)));
      rgb.push_back(std::uint8_t((x * y) % 256));
    }
  const std::string path = dir + "/" + name;
  mold::write_png(path, rgb.data(), w, h, {});
  return path;
}

}  // namespace mold::test
