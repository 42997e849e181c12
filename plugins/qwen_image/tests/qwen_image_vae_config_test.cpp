// The Qwen-Image VAE's config.json: the architecture and the latents'
// statistics are the file's (a fine-tune's or another VAE's differ from the
// published ones), and every key mold does not implement at the value found
// is refused by name.
#include "qwen_image_vae_config.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>

#include "qwen_image_vae.hpp"
#include "support/aten_for_tests.hpp"
#include "support/process.hpp"

using mold::test::TempDir;
using qwen_image::read_qwen_image_vae_config;

namespace {

std::string sixteen(double first, double rest) {
  std::string text = "[" + std::to_string(first);
  for (int i = 1; i < 16; ++i) text += ", " + std::to_string(rest);
  return text + "]";
}

}  // namespace

TEST_CASE(
    "the Qwen-Image VAE takes its latents' statistics and architecture from "
    "config.json",
    "[qwen_image][vae]") {
  TempDir dir;
  const std::string published = dir.write("published.json", R"({
    "_class_name": "AutoencoderKLQwenImage", "attn_scales": [], "base_dim": 96,
    "dim_mult": [1, 2, 4, 4], "dropout": 0.0, "num_res_blocks": 2,
    "temperal_downsample": [false, true, true], "z_dim": 16})");
  const auto defaults = read_qwen_image_vae_config(published);
  CHECK(defaults.arch == "default");
  CHECK(defaults.latents_mean == qwen_image::QwenImageVaeConfig{}.latents_mean);

  const std::string other = dir.write(
      "other.json", R"({"base_dim": 8, "latents_mean": )" + sixteen(0.5, 0) +
                        R"(, "latents_std": )" + sixteen(2, 1) + "}");
  const auto config = read_qwen_image_vae_config(other);
  CHECK(config.arch == "tiny");
  auto vae = qwen_image::declare_qwen_image_vae(config);
  const at::Tensor z = at::ones({1, 16, 2, 2});
  const at::Tensor scaled = vae->scale_latent(z);
  // (1 - 0.5) / 2 for channel 0, (1 - 0) / 1 for the others; and back.
  CHECK(scaled[0][0][0][0].item<float>() == 0.25f);
  CHECK(scaled[0][1][0][0].item<float>() == 1.0f);
  CHECK(vae->unscale_latent(scaled).allclose(z));

  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {R"({"base_dim": 64})", "key 'base_dim': is 64"},
      {R"({"z_dim": 4})", "key 'z_dim'"},
      {R"({"dim_mult": [1, 2, 4]})", "key 'dim_mult': is [1,2,4]"},
      {R"({"attn_scales": [0.5]})", "key 'attn_scales'"},
      {R"({"temperal_downsample": [true, true, true]})",
       "key 'temperal_downsample'"},
      {R"({"num_res_blocks": 3})", "key 'num_res_blocks': is 3"},
      {R"({"input_channels": 4})", "key 'input_channels': is 4"},
      {R"({"latents_std": )" + sixteen(0, 1) + "}",
       "key 'latents_std': has 0 at index 0"},
      {R"({"latents_mean": [1, 2]})", "key 'latents_mean': has 2 values"},
      {R"({"latents_mean": "x"})", "latents_mean"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const std::string path = dir.write("bad.json", c.text);
    CHECK_THROWS_WITH(read_qwen_image_vae_config(path),
                      Catch::Contains(path) && Catch::Contains(c.expected));
  }
}
