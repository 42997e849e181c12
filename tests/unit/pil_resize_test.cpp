// Resizing as Pillow does it: byte for byte against Pillow's own outputs
// (tests/data/pil_resize_golden.txt, made with Pillow 9.4.0) when shrinking,
// enlarging and along one axis only, for both filters the reference
// pipelines use; bad sizes are refused with the value named.
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/image/pil_resize.hpp>
#include <sstream>
#include <string>

#include "support/paths.hpp"

using mold::Image8;
using mold::ResampleFilter;

namespace {

Image8 pattern() {
  Image8 image{23, 17, 3, {}};
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < 3; ++c)
        image.pixels.push_back(
            std::uint8_t((x * 37 + y * 91 + c * 53 + (x * y) % 17 * 11) % 256));
  return image;
}

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(std::uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

}  // namespace

TEST_CASE("images are resized byte for byte as Pillow resizes them",
          "[image]") {
  std::ifstream in(std::string(mold::test::kDataDir) +
                   "/pil_resize_golden.txt");
  REQUIRE(in);
  const Image8 source = pattern();
  int cases = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string filter, hex;
    int width = 0, height = 0;
    fields >> filter >> width >> height >> hex;
    INFO(filter << " " << width << "x" << height);
    const Image8 out =
        mold::pil_resize(source, width, height,
                         filter == "lanczos" ? ResampleFilter::lanczos
                                             : ResampleFilter::bicubic);
    CHECK(out.width == width);
    CHECK(out.height == height);
    CHECK(out.pixels == from_hex(hex));
    ++cases;
  }
  CHECK(cases == 12);
  // The same size is a copy.
  CHECK(mold::pil_resize(source, 23, 17, ResampleFilter::lanczos).pixels ==
        source.pixels);
}

TEST_CASE("bad resize sizes are refused with the value named", "[image]") {
  const Image8 source = pattern();
  CHECK_THROWS_WITH(mold::pil_resize(source, 0, 5, ResampleFilter::bicubic),
                    Catch::Contains("width of 0"));
  CHECK_THROWS_WITH(mold::pil_resize(source, 5, 70000, ResampleFilter::bicubic),
                    Catch::Contains("height of 70000"));
  Image8 broken = source;
  broken.pixels.pop_back();
  CHECK_THROWS_AS(mold::pil_resize(broken, 5, 5, ResampleFilter::lanczos),
                  mold::InvalidArgument);
}
