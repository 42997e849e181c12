#pragma once
/// Image resizing exactly as Pillow's Image.resize does it for 8-bit images
/// (libImaging/Resample.c): separable convolution with an antialiasing
/// filter widened by the scale when shrinking, 22-bit fixed-point weights,
/// the horizontal pass first and rounded to 8 bits, then the vertical one.
/// The reference pipelines resize their input images with Pillow (diffusers'
/// VaeImageProcessor: Lanczos; Qwen2VLImageProcessor: bicubic), so an edit
/// made here sees the very pixels it sees there. Arithmetic only, no
/// libtorch.

#include <cstdint>
#include <vector>

namespace mold {

enum class ResampleFilter {
  bicubic,  ///< PIL.Image.BICUBIC (a = -0.5, support 2)
  lanczos,  ///< PIL.Image.LANCZOS (3 lobes, support 3)
};

/// An 8-bit image, rows top to bottom, each `width` pixels of `channels`
/// interleaved bytes.
struct Image8 {
  int width = 0;
  int height = 0;
  int channels = 3;
  std::vector<std::uint8_t> pixels;  ///< height x width x channels
};

/// `image` resized to width x height with `filter`, as
/// PIL.Image.resize((width, height), filter) on an image of that mode.
/// Throws InvalidArgument for a size below 1 or above 2^16 or an image
/// whose pixels do not match its sizes.
Image8 pil_resize(const Image8& image, int width, int height,
                  ResampleFilter filter);

}  // namespace mold
