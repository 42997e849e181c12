#pragma once
// The FLUX.1 AutoencoderKL that Z-Image uses, in the diffusers checkpoint
// layout.

#include <memory>
#include <mold/model/vae.hpp>
#include <string>

#include "flux_vae_config.hpp"

namespace zimage {

/// The FLUX VAE `config` describes with its parameters declared only (no
/// memory until seeded or loaded). Architecture "default": channels
/// 128/256/512/512, GroupNorm 32, 16 latent channels, 83.82 M parameters.
/// "tiny": channels 32/32/64/64 (for tests and CPU runs).
std::unique_ptr<mold::Vae> declare_flux_vae(const FluxVaeConfig& config);
/// The architecture `arch` with the published latent scaling, seeded from
/// `seed` (the family's VaeFactory).
std::unique_ptr<mold::Vae> make_flux_vae(const std::string& arch,
                                         std::uint64_t seed);

}  // namespace zimage
