#pragma once
// The source images of a Qwen-Image edit, prepared as diffusers'
// QwenImageEditPlusPipeline and transformers' Qwen2VLImageProcessor (the
// slow, Pillow one) prepare them: each image resized with Lanczos to about
// a target area in multiples of 32 (384^2 for the vision-language encoder,
// 1024^2 for the VAE), the encoder's copy resized again with bicubic to
// multiples of 28 and cut into the 14-pixel patches of its 2x2 merge
// groups, the VAE's copy scaled to [-1, 1].

#include <ATen/ATen.h>

#include <cstdint>
#include <mold/estimate/workload.hpp>
#include <utility>

#include "qwen25vl_text_encoder.hpp"

namespace qwen_image {

/// The areas the copies are made at: the published pipeline's, or the tiny
/// architecture's smaller ones (CPU tests).
struct EditAreas {
  double vision = 384.0 * 384.0;  ///< CONDITION_IMAGE_SIZE
  double vae = 1024.0 * 1024.0;   ///< VAE_IMAGE_SIZE
  static EditAreas published() { return {}; }
  /// 112^2 and 256^2 (16 image tokens and 256 latent tokens for a square).
  static EditAreas tiny() { return {112.0 * 112.0, 256.0 * 256.0}; }
};

/// calculate_dimensions(area, width / height): the size of that aspect
/// ratio with about `area` pixels, each side rounded (half to even) to a
/// multiple of 32, at least 32.
mold::ImageSize fit_to_area(double area, int width, int height);

/// Qwen2VLImageProcessor's smart_resize(height, width, factor 28, min_pixels
/// 3136, max_pixels 12845056): InvalidArgument when one side is more than
/// 200 times the other.
mold::ImageSize smart_resize(int width, int height);

/// One source image, ready for both encoders.
struct PreparedImage {
  VisionImage vision;           ///< the encoder's patches (float32)
  mold::ImageSize vision_size;  ///< the processor's pixels (multiples of 28)
  at::Tensor vae_input;         ///< (1, 3, H, W) float32 in [-1, 1]
  mold::ImageSize vae_size;
};

/// `rgb` (3, H, W) uint8 on the host. InvalidArgument naming `index` (1
/// based) for anything else.
PreparedImage prepare_edit_image(const at::Tensor& rgb, const EditAreas& areas,
                                 const Qwen25VLVisionConfig& vision,
                                 std::size_t index);

}  // namespace qwen_image
