#include "image_output.hpp"

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>

namespace mold_cli {

namespace fs = std::filesystem;

std::vector<mold::PngText> png_text(const mold::Pipeline& pipeline,
                                    const mold::GenerateRequest& r,
                                    std::uint64_t seed) {
  std::vector<mold::PngText> text = {
      {"prompt", r.prompt},
      {"seed", std::to_string(seed)},
      {"model", pipeline.model()},
      {"variant", pipeline.variant()},
      {"steps", std::to_string(r.steps)},
      {"width", std::to_string(r.width)},
      {"height", std::to_string(r.height)},
      {"guidance", fmt::format("{}", r.guidance.value_or(0.0))},
      {"seeded_weights", pipeline.seeded_weights() ? "true" : "false"},
      {"weights", pipeline.describe_weights()},
      {"Software", fmt::format("mold {}", MOLD_VERSION)}};
  if (r.negative_prompt)
    text.push_back({"negative_prompt", *r.negative_prompt});
  return text;
}

std::string encode_image(const at::Tensor& rgb,
                         const std::vector<mold::PngText>& text) {
  const at::Tensor pixels = rgb.permute({1, 2, 0}).contiguous();
  return mold::encode_png("image", pixels.data_ptr<std::uint8_t>(),
                          int(rgb.size(2)), int(rgb.size(1)), text);
}

void write_image(const fs::path& path, const at::Tensor& rgb,
                 const std::vector<mold::PngText>& text) {
  // (3, H, W) -> (H, W, 3): interleaved rows, top to bottom.
  const at::Tensor pixels = rgb.permute({1, 2, 0}).contiguous();
  mold::write_png(path, pixels.data_ptr<std::uint8_t>(), int(rgb.size(2)),
                  int(rgb.size(1)), text);
}

}  // namespace mold_cli
