#include "image_output.hpp"

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>

namespace mold_cli {

namespace fs = std::filesystem;

fs::path choose_output_path(const fs::path& dir, const std::string& model,
                            std::uint64_t seed, bool with_tensors) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      throw mold::InvalidArgument(
          fmt::format("--output {}: cannot create the directory ({})",
                      dir.string(), ec.message()));
  }
  if (!fs::is_directory(dir, ec))
    throw mold::InvalidArgument(
        fmt::format("--output {} is {}, not a directory: give a directory "
                    "for the images",
                    dir.string(), mold::describe_file_type(dir)));
  // Model names are the catalogue's ("z-image-turbo"); keep the file name
  // plain whatever a plugin calls its model.
  std::string stem;
  for (char c : model)
    stem += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
             c == '_' || c == '.')
                ? c
                : '_';
  for (int n = 1; n < 100000; ++n) {
    const fs::path candidate =
        dir / (n == 1 ? fmt::format("{}-{}.png", stem, seed)
                      : fmt::format("{}-{}-{}.png", stem, seed, n));
    fs::path tensors = candidate;
    tensors.replace_extension(".safetensors");
    if (!fs::exists(fs::symlink_status(candidate, ec)) &&
        !(with_tensors && fs::exists(fs::symlink_status(tensors, ec))))
      return candidate;
  }
  throw mold::InvalidArgument(fmt::format(
      "--output {}: every name for {}-{}.png is taken; clean it up or give "
      "another --output",
      dir.string(), stem, seed));
}

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
  if (!r.negative_prompt.empty())
    text.push_back({"negative_prompt", r.negative_prompt});
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
