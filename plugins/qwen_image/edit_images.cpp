#include "edit_images.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/image/pil_resize.hpp>

namespace qwen_image {

namespace {

constexpr int kFactor = 28;          // patch 14 x merge 2
constexpr double kMinPixels = 3136;  // preprocessor_config.json's
constexpr double kMaxPixels = 12845056;
constexpr int kMaxSourceSide =
    16384;  // the most pixels a side of a source image
// OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, the processor's normalisation.
constexpr float kMean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
constexpr float kStd[3] = {0.26862954f, 0.26130258f, 0.27577711f};

mold::Image8 to_image(const at::Tensor& rgb) {
  const at::Tensor hwc = rgb.permute({1, 2, 0}).contiguous();
  mold::Image8 image{int(rgb.size(2)), int(rgb.size(1)), 3, {}};
  const auto* p = hwc.data_ptr<std::uint8_t>();
  image.pixels.assign(p, p + hwc.numel());
  return image;
}

/// (3, H, W) float32 of the image's bytes.
at::Tensor to_chw(const mold::Image8& image) {
  at::Tensor hwc = at::empty({image.height, image.width, 3}, at::kByte);
  std::copy(image.pixels.begin(), image.pixels.end(),
            hwc.data_ptr<std::uint8_t>());
  return hwc.permute({2, 0, 1});
}

}  // namespace

mold::ImageSize fit_to_area(double area, int width, int height) {
  const double ratio = double(width) / double(height);
  const double w = std::sqrt(area * ratio);
  const double h = w / ratio;
  // Python's round(): half to even, which nearbyint does in the default
  // rounding mode.
  const auto round32 = [](double v) {
    return std::max(32, int(std::nearbyint(v / 32.0)) * 32);
  };
  return {round32(w), round32(h)};
}

mold::ImageSize smart_resize(int width, int height) {
  if (double(std::max(width, height)) / std::min(width, height) > 200)
    throw mold::InvalidArgument(fmt::format(
        "a source image of {}x{} pixels: its aspect ratio is beyond 200, "
        "which the Qwen2.5-VL image processor refuses",
        width, height));
  int h = int(std::nearbyint(double(height) / kFactor)) * kFactor;
  int w = int(std::nearbyint(double(width) / kFactor)) * kFactor;
  if (double(h) * w > kMaxPixels) {
    const double beta = std::sqrt(double(height) * width / kMaxPixels);
    h = std::max(kFactor, int(std::floor(height / beta / kFactor)) * kFactor);
    w = std::max(kFactor, int(std::floor(width / beta / kFactor)) * kFactor);
  } else if (double(h) * w < kMinPixels) {
    const double beta = std::sqrt(kMinPixels / (double(height) * width));
    h = int(std::ceil(height * beta / kFactor)) * kFactor;
    w = int(std::ceil(width * beta / kFactor)) * kFactor;
  }
  return {w, h};
}

PreparedImage prepare_edit_image(const at::Tensor& rgb, const EditAreas& areas,
                                 const Qwen25VLVisionConfig& vision,
                                 std::size_t index) {
  if (!rgb.defined() || rgb.dim() != 3 || rgb.size(0) != 3 ||
      rgb.scalar_type() != at::kByte || rgb.size(1) < 1 || rgb.size(2) < 1 ||
      rgb.size(1) > kMaxSourceSide || rgb.size(2) > kMaxSourceSide)
    throw mold::InvalidArgument(fmt::format(
        "source image {} is {}; expected 3 x H x W 8-bit RGB with sides of 1 "
        "to {} pixels",
        index + 1, rgb.defined() ? c10::str(rgb.sizes()) : "undefined",
        kMaxSourceSide));
  if (vision.patch_size * vision.spatial_merge_size != kFactor ||
      vision.temporal_patch_size != 2)
    throw mold::InvalidArgument(
        "the Qwen2.5-VL image processor makes 14-pixel patches in 2x2 groups "
        "of 2 frames; this vision tower takes other patches");
  const mold::Image8 source = to_image(rgb.to(at::kCPU));
  PreparedImage out;

  // The encoder's copy: Lanczos to the condition area, then the processor's
  // bicubic to multiples of 28, rescaled and normalised.
  const mold::ImageSize condition =
      fit_to_area(areas.vision, source.width, source.height);
  const mold::Image8 small = mold::pil_resize(
      source, condition.width, condition.height, mold::ResampleFilter::lanczos);
  out.vision_size = smart_resize(small.width, small.height);
  const mold::Image8 processed =
      mold::pil_resize(small, out.vision_size.width, out.vision_size.height,
                       mold::ResampleFilter::bicubic);
  at::Tensor x =
      to_chw(processed).to(at::kDouble).mul(1.0 / 255).to(at::kFloat);
  const at::Tensor mean =
      at::tensor(std::vector<float>(kMean, kMean + 3)).view({3, 1, 1});
  const at::Tensor std_ =
      at::tensor(std::vector<float>(kStd, kStd + 3)).view({3, 1, 1});
  x = (x - mean) / std_;
  const int64_t p = vision.patch_size, m = vision.spatial_merge_size;
  const int64_t gh = out.vision_size.height / p, gw = out.vision_size.width / p;
  out.vision.grid_t = 1;
  out.vision.grid_h = gh;
  out.vision.grid_w = gw;
  out.vision.pixel_values =
      x.unsqueeze(0)
          .expand({2, 3, out.vision_size.height, out.vision_size.width})
          .reshape({1, 2, 3, gh / m, m, p, gw / m, m, p})
          .permute({0, 3, 6, 4, 7, 2, 1, 5, 8})
          .reshape({gh * gw, 3 * 2 * p * p})
          .contiguous();

  // The VAE's copy: Lanczos to the VAE area, [0, 255] -> [-1, 1].
  out.vae_size = fit_to_area(areas.vae, source.width, source.height);
  const mold::Image8 large =
      mold::pil_resize(source, out.vae_size.width, out.vae_size.height,
                       mold::ResampleFilter::lanczos);
  out.vae_input = (to_chw(large).to(at::kFloat) / 255.0f * 2 - 1).unsqueeze(0);
  return out;
}

}  // namespace qwen_image
