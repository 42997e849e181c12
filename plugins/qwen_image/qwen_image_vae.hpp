#pragma once
// The Qwen-Image VAE (AutoencoderKLQwenImage), for single images, in the
// diffusers checkpoint layout.

#include <memory>
#include <mold/model/vae.hpp>
#include <string>

#include "qwen_image_vae_config.hpp"

namespace qwen_image {

/// The VAE `config` describes, its parameters declared only (the caller
/// seeds or loads them). Architecture "default": base 96, multipliers
/// [1, 2, 4, 4], z 16, 126.89 M parameters; "tiny": base 8 (for tests and
/// CPU runs).
std::unique_ptr<mold::Vae> declare_qwen_image_vae(
    const QwenImageVaeConfig& config);

/// The architecture `arch` with the published latent statistics, seeded
/// from `seed` (the family's VaeFactory).
std::unique_ptr<mold::Vae> make_qwen_image_vae(const std::string& arch,
                                               std::uint64_t seed);

}  // namespace qwen_image
