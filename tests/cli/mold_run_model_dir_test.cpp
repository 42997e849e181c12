// mold run from a diffusers-format model directory: the path a user with the
// published checkpoint takes (model_index.json, component configs, weights,
// the tokenizer files, the scheduler config), here with tiny configs whose
// weights the test writes from seeded models. Loading the checkpoint must
// give the same image as the same seeded weights do.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/catalog/model_family.hpp>
#include <mold/runtime/png.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"
#include "support/zimage_model_dir.hpp"

namespace fs = std::filesystem;
using mold::test::make_zimage_model_dir;
using mold::test::run_mold;
using mold::test::TempDir;
using mold::test::ZImageWidths;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
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
  const fs::path dir =
      make_zimage_model_dir(*family, models.path(), tokenizer_json);

  const std::vector<std::string> common = {
      "--width", "64", "--height", "32", "--steps", "3", "--dtype", "float32"};
  auto args = [&](std::vector<std::string> first, const std::string& output) {
    first.insert(first.end(), common.begin(), common.end());
    first.push_back("--output");
    first.push_back(output);
    return first;
  };
  mold::test::ProcessResult r;
  // Each SECTION runs the case from the top: the two runs only once.
  SECTION("found by name, it gives the seeded run's image") {
    // Found by name in MOLD_MODELS_DIR.
    r = run_mold(
        args({"run", "z-image-turbo", "a red fox in the snow"}, out_dir.path()),
        {{"MOLD_MODELS_DIR", models.path()}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, !Catch::Contains("seeded weights"));
    const auto loaded =
        mold::read_png(fs::path(out_dir.path()) / "z-image-turbo-0.png");
    CHECK(loaded.text.at("seeded_weights") == "false");
    CHECK(loaded.text.at("weights") == dir.string());

    r = run_mold(
        args({"run", "z-image-turbo", "a red fox in the snow", "--tiny"},
             out_tiny.path()));
    REQUIRE(r.exit_code == 0);
    const auto seeded =
        mold::read_png(fs::path(out_tiny.path()) / "z-image-turbo-0.png");
    CHECK(loaded.rgb == seeded.rgb);
  }

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
  SECTION("the VAE config's latent scaling is used; what mold lacks, refused") {
    // Another scaling_factor and shift_factor (a fine-tune's VAE): the same
    // latents, decoded after their own unscaling, so another image.
    const std::string config = R"({"_class_name": "AutoencoderKL",
        "in_channels": 3, "out_channels": 3, "latent_channels": 16,
        "block_out_channels": [32, 32, 64, 64], "layers_per_block": 2,
        "norm_num_groups": 32, "act_fn": "silu", "use_quant_conv": false,
        "use_post_quant_conv": false, "mid_block_add_attention": true,
        "scaling_factor": SCALE, "shift_factor": SHIFT})";
    auto with = [&](const std::string& scale, const std::string& shift) {
      std::string text = config;
      text.replace(text.find("SCALE"), 5, scale);
      text.replace(text.find("SHIFT"), 5, shift);
      write(dir / "vae" / "config.json", text);
    };
    // The published values (the directory's own) give the published image.
    TempDir same;
    r = run_mold(args({"run", "z-image-turbo", "a red fox in the snow",
                       "--model-dir", dir.string()},
                      same.path()));
    REQUIRE(r.exit_code == 0);
    const auto published =
        mold::read_png(fs::path(same.path()) / "z-image-turbo-0.png");
    with("0.5", "0.0");
    TempDir other;
    r = run_mold(args({"run", "z-image-turbo", "a red fox in the snow",
                       "--model-dir", dir.string(), "--save-tensors"},
                      other.path()));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rescaled =
        mold::read_png(fs::path(other.path()) / "z-image-turbo-0.png");
    CHECK(rescaled.rgb != published.rgb);
    with("0.3611", "0.1159");
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{
             {"scaling_factor", "0"},
             {"use_quant_conv", "true"},
             {"layers_per_block", "3"},
             {"act_fn", "\"gelu\""}}) {
      std::string text = config;
      text.replace(text.find("SCALE"), 5, "0.3611");
      text.replace(text.find("SHIFT"), 5, "0.1159");
      text.insert(text.size() - 1, ", \"" + key + "\": " + value);
      write(dir / "vae" / "config.json", text);
      r = run_mold(
          args({"run", "z-image-turbo", "fox", "--model-dir", dir.string()},
               out_dir.path()));
      INFO(key << " = " << value << ": " << r.err);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.err, Catch::Contains("config.json") &&
                            Catch::Contains("'" + key + "'"));
    }
  }
  SECTION("a directory of another pipeline or component class is refused") {
    const std::string index = R"({
        "_class_name": "PIPELINE", "_diffusers_version": "0.36.0",
        "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
        "text_encoder": ["transformers", "Qwen3Model"],
        "tokenizer": ["transformers", "Qwen2Tokenizer"],
        "transformer": ["diffusers", "TRANSFORMER"],
        "vae": ["diffusers", "AutoencoderKL"]})";
    auto with = [&](const std::string& pipeline,
                    const std::string& transformer) {
      std::string text = index;
      text.replace(text.find("PIPELINE"), 8, pipeline);
      text.replace(text.find("TRANSFORMER"), 11, transformer);
      write(dir / "model_index.json", text);
      return run_mold(
          args({"run", "z-image-turbo", "fox", "--model-dir", dir.string()},
               out_dir.path()));
    };
    r = with("FluxPipeline", "ZImageTransformer2DModel");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("model_index.json") &&
                          Catch::Contains("'_class_name'") &&
                          Catch::Contains("\"FluxPipeline\"") &&
                          Catch::Contains("\"ZImagePipeline\""));
    r = with("ZImagePipeline", "FluxTransformer2DModel");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("'transformer'") &&
                          Catch::Contains("FluxTransformer2DModel"));
    // A component the model needs, given as no component or as a number,
    // is refused by name before anything loads.
    for (const std::string value : {"[null, null]", "5"}) {
      std::string text = index;
      text.replace(text.find("PIPELINE"), 8, "ZImagePipeline");
      text.replace(text.find("[\"diffusers\", \"TRANSFORMER\"]"), 28, value);
      write(dir / "model_index.json", text);
      r = run_mold(
          args({"run", "z-image-turbo", "fox", "--model-dir", dir.string()},
               out_dir.path()));
      INFO(value);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.err, Catch::Contains("model_index.json") &&
                            Catch::Contains("'transformer'") &&
                            Catch::Contains("ZImageTransformer2DModel"));
    }
    r = with("ZImagePipeline", "ZImageTransformer2DModel");
    CHECK(r.exit_code == 0);
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
    "config: the stage counts with the shipped factors cover a 4x wider "
    "model within 1.00-1.10",
    "[mold][run][model_dir][estimate]") {
  const mold::ModelFamily* family = mold::test::real_plugins().family("zimage");
  REQUIRE(family);
  const fs::path tokenizer_json =
      fs::path(mold::test::kPluginDir) / "zimage.tokenizer.json";
  std::string prompt = "a";
  for (int i = 0; i < 120; ++i) prompt += " river stone";
  ZImageWidths wide;
  wide.text_hidden = 128;
  wide.text_intermediate = 384;
  wide.text_heads = 8;
  wide.text_kv = 4;
  wide.text_head_dim = 16;
  wide.dit_heads = 8;  // dim 256
  for (const ZImageWidths& w : {ZImageWidths{}, wide}) {
    TempDir models, out;
    const fs::path dir =
        make_zimage_model_dir(*family, models.path(), tokenizer_json, w);
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
      // The stage counts carry the widths: the shipped factors.
      CHECK_THAT(phase["estimate_source"].get<std::string>(),
                 Catch::Contains("[" + op + ".cpu]"));
    }
  }
}
