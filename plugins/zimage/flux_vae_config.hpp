#pragma once
// A FLUX VAE's vae/config.json (diffusers' AutoencoderKL): the architecture
// it describes and how its latents are scaled for the transformer. Every key
// of AutoencoderKL's config that changes the math is used here or refused by
// name when its value is one mold does not implement.

#include <filesystem>
#include <string>

namespace zimage {

struct FluxVaeConfig {
  std::string arch = "default";  ///< "default" or "tiny" (the channels)
  /// Latents for the transformer are (z - shift_factor) x scaling_factor;
  /// the published config's values.
  double scaling_factor = 0.3611;
  double shift_factor = 0.1159;
};

/// Reads `file`; throws mold::ConfigError naming the file and the key.
FluxVaeConfig read_flux_vae_config(const std::filesystem::path& file);

}  // namespace zimage
