#pragma once
// A Qwen-Image VAE's vae/config.json (diffusers' AutoencoderKLQwenImage): the
// architecture it describes and its latents' per-channel statistics. Every
// key of the config class that changes the math is used here or refused by
// name when its value is one mold does not implement.

#include <filesystem>
#include <string>
#include <vector>

namespace qwen_image {

struct QwenImageVaeConfig {
  std::string arch = "default";  ///< "default" (base_dim 96) or "tiny" (8)
  /// Latents for the transformer are (z - mean) / std per channel; the
  /// published config's values.
  std::vector<float> latents_mean = {-0.7571f, -0.7089f, -0.9113f, 0.1075f,
                                     -0.1745f, 0.9653f,  -0.1517f, 1.5508f,
                                     0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                     -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
  std::vector<float> latents_std = {
      2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f,
      3.2687f, 2.1526f, 2.8652f, 1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f};
};

/// Reads `file`; throws mold::ConfigError naming the file and the key.
QwenImageVaeConfig read_qwen_image_vae_config(
    const std::filesystem::path& file);

}  // namespace qwen_image
