#pragma once
/// The family's VAE, for the commands that run one (vae, tiling, calibrate).
/// Includes libtorch (through mold/model/vae.hpp): only those commands use it.

#include <cstdint>
#include <memory>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <string>

namespace molddiag {

/// The family's VAE in architecture `arch` ("default", "tiny") with weights
/// from `seed`. Throws mold::NotFound naming the family when it is unknown
/// (listing the registered ones) or has no VAE.
std::unique_ptr<mold::Vae> make_family_vae(const mold::Registry& registry,
                                           const std::string& family,
                                           const std::string& arch,
                                           std::uint64_t seed);

}  // namespace molddiag
