// mold run from a diffusers-format model directory: the path a user with the
// published checkpoint takes (model_index.json, component configs, weights,
// the tokenizer files, the scheduler config), here with tiny configs whose
// weights the test writes from seeded models. Loading the checkpoint must
// give the same image as the same seeded weights do.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/catalog/model_family.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/transformer.hpp>
#include <mold/model/vae.hpp>
#include <mold/runtime/png.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"

namespace fs = std::filesystem;
using mold::test::run_mold;
using mold::test::TempDir;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void copy_to(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

std::vector<std::pair<std::string, at::Tensor>> named(
    const mold::Module& module, const std::string& prefix = "") {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, t] : module.parameters())
    out.emplace_back(prefix + name, t);
  return out;
}

/// The widths of a model directory's text encoder and transformer; the
/// defaults are the tiny built-ins'.
struct Widths {
  int text_hidden = 32, text_intermediate = 64, text_heads = 4, text_kv = 2,
      text_head_dim = 8;
  int dit_heads = 2;  // the transformer's dim is heads x 32 (the RoPE axes)
};

/// A Z-Image model directory, each component's weights seeded as `mold run
/// --tiny` seeds them (seed 0 + 1, 2, 3): with the default widths, the tiny
/// architecture.
fs::path make_model_dir(const mold::ModelFamily& family, const fs::path& root,
                        const fs::path& tokenizer_json, const Widths& w = {}) {
  const fs::path dir = root / "z-image-turbo";
  write(dir / "model_index.json", R"({
    "_class_name": "ZImagePipeline", "_diffusers_version": "0.36.0",
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "Qwen3Model"],
    "tokenizer": ["transformers", "Qwen2Tokenizer"],
    "transformer": ["diffusers", "ZImageTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKL"]})");
  write(dir / "scheduler" / "scheduler_config.json",
        R"({"_class_name": "FlowMatchEulerDiscreteScheduler",
            "num_train_timesteps": 1000, "shift": 3.0,
            "use_dynamic_shifting": false})");
  write(dir / "text_encoder" / "config.json",
        fmt::format(
            R"({{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
            "vocab_size": 151936, "hidden_size": {}, "intermediate_size": {},
            "num_hidden_layers": 3, "num_attention_heads": {},
            "num_key_value_heads": {}, "head_dim": {}, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000, "rope_scaling": null,
            "attention_bias": false, "hidden_act": "silu",
            "max_position_embeddings": 40960, "tie_word_embeddings": true}})",
            w.text_hidden, w.text_intermediate, w.text_heads, w.text_kv,
            w.text_head_dim));
  write(dir / "transformer" / "config.json",
        fmt::format(R"({{"_class_name": "ZImageTransformer2DModel",
            "all_patch_size": [2], "all_f_patch_size": [1],
            "in_channels": 16, "dim": {}, "n_layers": 2,
            "n_refiner_layers": 1, "n_heads": {}, "n_kv_heads": {},
            "norm_eps": 1e-5, "qk_norm": true, "cap_feat_dim": {},
            "rope_theta": 256.0, "t_scale": 1000.0,
            "axes_dims": [8, 12, 12], "axes_lens": [1536, 512, 512]}})",
                    w.dit_heads * 32, w.dit_heads, w.dit_heads, w.text_hidden));
  write(dir / "vae" / "config.json",
        R"({"_class_name": "AutoencoderKL", "in_channels": 3,
            "out_channels": 3, "latent_channels": 16,
            "block_out_channels": [32, 32, 64, 64],
            "scaling_factor": 0.3611, "shift_factor": 0.1159,
            "use_quant_conv": false, "use_post_quant_conv": false})");
  const fs::path tokenizer_dir =
      fs::path(mold::test::kDataDir) / "tokenizer" / "qwen3";
  copy_to(tokenizer_json, dir / "tokenizer" / "tokenizer.json");
  copy_to(tokenizer_dir / "tokenizer_config.json",
          dir / "tokenizer" / "tokenizer_config.json");

  auto encoder = family.make_text_encoder(
      mold::ArchSpec::from_config(dir / "text_encoder" / "config.json"));
  encoder->init_from_seed(1);
  // As published: a Qwen3ForCausalLM checkpoint, names under "model.", in
  // two shards with an index.
  auto tensors = named(*encoder, "model.");
  const std::size_t half = tensors.size() / 2;
  std::vector<std::pair<std::string, at::Tensor>> first(tensors.begin(),
                                                        tensors.begin() + half),
      second(tensors.begin() + half, tensors.end());
  mold::save_safetensors(
      dir / "text_encoder" / "model-00001-of-00002.safetensors", first);
  mold::save_safetensors(
      dir / "text_encoder" / "model-00002-of-00002.safetensors", second);
  std::string map;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    map += (i ? ",\n" : "") + std::string("\"") + tensors[i].first + "\": \"" +
           (i < half ? "model-00001-of-00002.safetensors"
                     : "model-00002-of-00002.safetensors") +
           "\"";
  write(dir / "text_encoder" / "model.safetensors.index.json",
        "{\"metadata\": {}, \"weight_map\": {" + map + "}}");

  auto transformer = family.make_transformer(
      mold::ArchSpec::from_config(dir / "transformer" / "config.json"));
  transformer->init_from_seed(2);
  mold::save_safetensors(
      dir / "transformer" / "diffusion_pytorch_model.safetensors",
      named(*transformer));
  auto vae = family.make_vae("tiny", 3);
  mold::save_safetensors(dir / "vae" / "diffusion_pytorch_model.safetensors",
                         named(*vae));
  return dir;
}

}  // namespace

TEST_CASE("mold run from a model directory gives the seeded run's image",
          "[mold][run][model_dir]") {
  const mold::ModelFamily* family = mold::test::real_plugins().family("zimage");
  REQUIRE(family);
  TempDir models, out_dir, out_tiny;
  const fs::path tokenizer_json =
      fs::path(mold::test::kPluginDir) / "zimage.tokenizer.json";
  REQUIRE(fs::exists(tokenizer_json));
  const fs::path dir = make_model_dir(*family, models.path(), tokenizer_json);

  const std::vector<std::string> common = {
      "--width", "64", "--height", "32", "--steps", "3", "--dtype", "float32"};
  auto args = [&](std::vector<std::string> first, const std::string& output) {
    first.insert(first.end(), common.begin(), common.end());
    first.push_back("--output");
    first.push_back(output);
    return first;
  };
  // Found by name in MOLD_MODELS_DIR.
  auto r = run_mold(
      args({"run", "z-image-turbo", "a red fox in the snow"}, out_dir.path()),
      {{"MOLD_MODELS_DIR", models.path()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, !Catch::Contains("seeded weights"));
  const auto loaded =
      mold::read_png(fs::path(out_dir.path()) / "z-image-turbo-0.png");
  CHECK(loaded.text.at("seeded_weights") == "false");
  CHECK(loaded.text.at("weights") == dir.string());

  r = run_mold(args({"run", "z-image-turbo", "a red fox in the snow", "--tiny"},
                    out_tiny.path()));
  REQUIRE(r.exit_code == 0);
  const auto seeded =
      mold::read_png(fs::path(out_tiny.path()) / "z-image-turbo-0.png");
  CHECK(loaded.rgb == seeded.rgb);

  SECTION("a missing tensor is named") {
    fs::remove(dir / "transformer" / "diffusion_pytorch_model.safetensors");
    mold::save_safetensors(
        dir / "transformer" / "diffusion_pytorch_model.safetensors",
        {{"x_pad_token", at::zeros({1, 64})}});
    r = run_mold(
        args({"run", "z-image-turbo", "fox", "--model-dir", dir.string()},
             out_dir.path()));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("are missing") &&
                          Catch::Contains("transformer"));
  }
  SECTION("a config the model cannot be is named") {
    write(dir / "vae" / "config.json",
          R"({"block_out_channels": [8, 8], "latent_channels": 16})");
    r = run_mold(
        args({"run", "z-image-turbo", "fox", "--model-dir", dir.string()},
             out_dir.path()));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("block_out_channels"));
  }
}

TEST_CASE(
    "a model directory's text_encode and denoise estimates follow its "
    "config: the tiny-fitted constants cover a 4x wider model within "
    "1.00-1.10",
    "[mold][run][model_dir][estimate]") {
  const mold::ModelFamily* family = mold::test::real_plugins().family("zimage");
  REQUIRE(family);
  const fs::path tokenizer_json =
      fs::path(mold::test::kPluginDir) / "zimage.tokenizer.json";
  std::string prompt = "a";
  for (int i = 0; i < 120; ++i) prompt += " river stone";
  Widths wide;
  wide.text_hidden = 128;
  wide.text_intermediate = 384;
  wide.text_heads = 8;
  wide.text_kv = 4;
  wide.text_head_dim = 16;
  wide.dit_heads = 8;  // dim 256
  for (const Widths& w : {Widths{}, wide}) {
    TempDir models, out;
    const fs::path dir =
        make_model_dir(*family, models.path(), tokenizer_json, w);
    const auto r =
        run_mold({"run", "z-image-turbo", prompt, "--model-dir", dir.string(),
                  "--width", "192", "--height", "160", "--steps", "1",
                  "--dtype", "float32", "--json", "--output", out.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto report = nlohmann::json::parse(r.out);
    for (const auto& phase : report["phases"]) {
      const std::string op = phase["phase"];
      if (op != "text_encode" && op != "denoise") continue;
      const double measured =
          double(phase["after"]["peak_allocated"].get<long>() -
                 phase["before"]["allocated"].get<long>());
      const double estimate = double(phase["estimate_bytes"].get<long>());
      INFO("text hidden " << w.text_hidden << ", dit heads " << w.dit_heads
                          << ", " << op << ": estimate " << estimate
                          << ", measured " << measured);
      REQUIRE(measured > 0);
      CHECK(estimate / measured >= 1.00);
      CHECK(estimate / measured <= 1.10);
      // Transferred from the tiny architecture's measurement: said so.
      CHECK_THAT(phase["estimate_source"].get<std::string>(),
                 Catch::Contains("applied to default through its sizes"));
    }
  }
}
