#include "qwen_image_vae_config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <mold/base/error.hpp>
#include <mold/config/json_config.hpp>
#include <mold/estimate/arch_names.hpp>

namespace qwen_image {

namespace {

constexpr int64_t kLatentChannels = 16;

/// A list key mold implements at one value only: absent or that value.
void require_list(const mold::JsonConfig& json, const char* key,
                  const std::string& expected_json, const char* why) {
  if (json.has_value(key) && json.dump(key) != expected_json)
    json.fail(key, fmt::format("is {}; mold's Qwen-Image VAE has {} ({})",
                               json.shown(key), expected_json, why));
}

std::vector<float> statistics(const mold::JsonConfig& json, const char* key,
                              std::vector<float> fallback, bool positive) {
  if (!json.has_value(key)) return fallback;
  const std::vector<double> values = json.numbers(key);
  if (values.size() != std::size_t(kLatentChannels))
    json.fail(key, fmt::format("has {} values; give one per latent channel "
                               "(16)",
                               values.size()));
  std::vector<float> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (positive && !(values[i] > 0))
      json.fail(key, fmt::format("has {} at index {}; every value must be "
                                 "positive (the latents are divided by it)",
                                 values[i], i));
    out.push_back(float(values[i]));
  }
  return out;
}

}  // namespace

QwenImageVaeConfig read_qwen_image_vae_config(
    const std::filesystem::path& file) {
  const mold::JsonConfig json = mold::JsonConfig::read(file);
  QwenImageVaeConfig config;
  const int64_t base = json.integer_or("base_dim", 96, 1, 1 << 16);
  if (base == 96)
    config.arch = mold::archs::kDefault;
  else if (base == 8)
    config.arch = mold::archs::kTiny;
  else
    json.fail("base_dim", fmt::format("is {}; mold's Qwen-Image VAE has 96 "
                                      "(the published one) or 8 (tiny)",
                                      base));
  if (json.integer_or("z_dim", kLatentChannels, 1, 1 << 16) != kLatentChannels)
    json.fail("z_dim", "is not 16; Qwen-Image's VAE has 16 latent channels");
  require_list(json, "dim_mult", "[1,2,4,4]", "the published multipliers");
  require_list(json, "attn_scales", "[]", "no attention in the stages");
  require_list(json, "temperal_downsample", "[false,true,true]",
               "its resamples and time convolutions");
  if (json.has_value("num_res_blocks") && json.integer("num_res_blocks") != 2)
    json.fail("num_res_blocks",
              fmt::format("is {}; mold's Qwen-Image VAE has 2 residual "
                          "blocks per stage",
                          json.shown("num_res_blocks")));
  for (const char* key : {"input_channels", "in_channels"})
    if (json.has_value(key) && json.integer(key) != 3)
      json.fail(key, fmt::format("is {}; mold's Qwen-Image VAE takes RGB "
                                 "images (3)",
                                 json.shown(key)));
  config.latents_mean =
      statistics(json, "latents_mean", config.latents_mean, false);
  config.latents_std =
      statistics(json, "latents_std", config.latents_std, true);
  return config;
}

}  // namespace qwen_image
