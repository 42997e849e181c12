#include "flux_vae_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/config/json_config.hpp>
#include <mold/estimate/arch_names.hpp>
#include <vector>

namespace zimage {

namespace {

constexpr int64_t kLatentChannels = 16;

/// A key mold implements at one value only: that value, or absent when
/// diffusers' AutoencoderKL takes that value for an absent key (`absent`,
/// its __init__ default); an absent key whose default is another value would
/// be another VAE, and is refused by name.
void require_integer(const mold::JsonConfig& json, const char* key,
                     int64_t value, int64_t absent, const char* why) {
  if (!json.has_value(key)) {
    if (absent != value)
      json.fail(key, fmt::format("is absent, so diffusers' AutoencoderKL "
                                 "takes {}; mold's FLUX VAE has {} ({}): give "
                                 "the key",
                                 absent, value, why));
    return;
  }
  if (json.integer(key) != value)
    json.fail(key, fmt::format("is {}; mold's FLUX VAE has {} ({})",
                               json.shown(key), value, why));
}

void require_boolean(const mold::JsonConfig& json, const char* key, bool value,
                     bool absent, const char* why) {
  const char* text = value ? "true" : "false";
  if (!json.has_value(key)) {
    if (absent != value)
      json.fail(key, fmt::format("is absent, so diffusers' AutoencoderKL "
                                 "takes {}; mold's FLUX VAE has {} ({}): give "
                                 "the key",
                                 absent ? "true" : "false", text, why));
    return;
  }
  if (json.boolean(key) != value)
    json.fail(key, fmt::format("is {}; mold's FLUX VAE has {} ({})",
                               json.shown(key), text, why));
}

void require_all(const mold::JsonConfig& json, const char* key,
                 const std::string& value, std::size_t count) {
  if (!json.has_value(key)) return;
  const std::vector<std::string> found = json.strings(key);
  if (found.size() != count ||
      std::any_of(found.begin(), found.end(),
                  [&](const std::string& s) { return s != value; }))
    json.fail(key, fmt::format("is {}; mold's FLUX VAE has {} x \"{}\"",
                               json.shown(key), count, value));
}

}  // namespace

FluxVaeConfig read_flux_vae_config(const std::filesystem::path& file) {
  const mold::JsonConfig json = mold::JsonConfig::read(file);
  FluxVaeConfig config;
  const std::vector<int64_t> channels =
      json.integers("block_out_channels", 1, 1 << 20);
  if (channels == std::vector<int64_t>{128, 256, 512, 512})
    config.arch = mold::archs::kDefault;
  else if (channels == std::vector<int64_t>{32, 32, 64, 64})
    config.arch = mold::archs::kTiny;
  else
    json.fail("block_out_channels",
              fmt::format("is {}; mold's FLUX VAE has [128, 256, 512, 512] "
                          "(the published one) or [32, 32, 64, 64] (tiny)",
                          json.shown("block_out_channels")));
  // The second value is AutoencoderKL's default for an absent key.
  require_integer(json, "latent_channels", kLatentChannels, 4,
                  "Z-Image's transformer takes 16 latent channels");
  require_integer(json, "in_channels", 3, 3, "RGB images");
  require_integer(json, "out_channels", 3, 3, "RGB images");
  require_integer(json, "layers_per_block", 2, 1,
                  "2 resnets per encoder block, 3 per decoder block");
  require_integer(json, "norm_num_groups", 32, 32, "GroupNorm of 32 groups");
  require_boolean(json, "use_quant_conv", false, true,
                  "no quant_conv: FLUX's VAE has none");
  require_boolean(json, "use_post_quant_conv", false, true,
                  "no post_quant_conv: FLUX's VAE has none");
  require_boolean(json, "mid_block_add_attention", true, true,
                  "an attention in each mid block");
  if (json.has_value("act_fn") && json.string("act_fn") != "silu")
    json.fail("act_fn", fmt::format("is {}; mold's FLUX VAE has \"silu\"",
                                    json.shown("act_fn")));
  require_all(json, "down_block_types", "DownEncoderBlock2D", channels.size());
  require_all(json, "up_block_types", "UpDecoderBlock2D", channels.size());
  // The latents' scale and shift: what the pipeline divides and adds before
  // decoding (diffusers' ZImagePipeline reads both from this config).
  // Absent: AutoencoderKL's default, 0.18215 (what diffusers would use).
  config.scaling_factor = json.number_or("scaling_factor", 0.18215);
  if (!(config.scaling_factor > 0))
    json.fail("scaling_factor",
              fmt::format("is {}; it must be a positive number (the "
                          "published VAE's is 0.3611)",
                          config.scaling_factor));
  // Absent or null: AutoencoderKL's None, which Z-Image's pipeline cannot
  // add to a latent.
  if (!json.has_value("shift_factor"))
    json.fail("shift_factor",
              fmt::format("is {}; Z-Image's pipeline adds it to every latent: "
                          "give a number (the published VAE's is 0.1159)",
                          json.has("shift_factor") ? "null" : "absent"));
  config.shift_factor = json.number("shift_factor");
  return config;
}

}  // namespace zimage
