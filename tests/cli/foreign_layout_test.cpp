// Checkpoints in the layouts people download, written by the inverse of each
// mapping (support/foreign_layouts.hpp) from seeded tiny models: they load to
// the same parameters bit for bit (tests/torch/foreign_layout_load_test.cpp),
// and `mold run --transformer/--vae/--text-encoder` makes the same image as
// the seeded run, naming each file and its layout in --plan; a ComfyUI folder
// is searched by content; molddiag inspect names what a file fits. Mutated
// files are refused by name.

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mold/catalog/comfy_model_folder.hpp>
#include <mold/catalog/components.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/vae.hpp>
#include <mold/runtime/module_component.hpp>
#include <mold/runtime/png.hpp>
#include <mold/tensor/checkpoint.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "support/aten_for_tests.hpp"
#include "support/foreign_layouts.hpp"
#include "support/fp8_checkpoint.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"

namespace fs = std::filesystem;
using mold::test::NamedTensors;
using mold::test::run_mold;
using mold::test::TempDir;
namespace components = mold::components;

namespace {

/// `tensors` with each matrix whose rows are whole Q8_0 blocks replaced by
/// its values after Q8_0 quantization (what write_gguf(q8) stores).
NamedTensors q8_values(const NamedTensors& tensors) {
  NamedTensors out;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.to(at::kFloat).contiguous().clone();
    if (t.dim() == 2 && t.size(1) % 32 == 0) {
      const auto n = std::size_t(t.numel());
      std::vector<std::uint8_t> blocks(n / 32 * 34);
      mold::quantize_blocks(mold::GgmlType::q8_0, t.data_ptr<float>(), n,
                            blocks.data());
      mold::dequantize_blocks(mold::GgmlType::q8_0, blocks.data(), n,
                              t.data_ptr<float>());
    }
    out.emplace_back(name, t);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "quantized files run: an fp8 scaled transformer and a Q8_0 text "
    "encoder make the image of their decoded values",
    "[layout][float8][mold][run]") {
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir files, quantized_out, twin_out;
  const fs::path root = files.path();
  auto encoder = z.make_text_encoder(tiny);
  encoder->init_from_seed(1);
  const NamedTensors llama = mold::test::llama_cpp_decoder(*encoder, "");
  mold::test::write_gguf(root / "qwen3-Q8_0.gguf", "qwen3", llama,
                         /*q8=*/true);
  mold::test::write_gguf(root / "qwen3-twin.gguf", "qwen3", q8_values(llama));
  auto transformer = z.make_transformer(tiny);
  transformer->init_from_seed(2);
  const std::string prefix = "model.diffusion_model.";
  mold::save_safetensors(
      root / "z_twin.safetensors",
      mold::test::write_fp8_safetensors(
          root / "z_image_turbo_fp8_scaled.safetensors",
          mold::test::zimage_comfy_transformer(*transformer, prefix),
          mold::test::Fp8Scales::scale_weight, mold::Float8Format::e4m3fn,
          prefix));
  auto vae = z.make_vae("tiny", 3);
  mold::save_safetensors(root / "ae.safetensors",
                         mold::test::flux_ldm_vae(*vae));
  auto run = [&](const std::string& transformer_file,
                 const std::string& encoder_file, const std::string& out) {
    return run_mold({"run", "z-image-turbo", "a red fox", "--tiny", "--width",
                     "64", "--height", "32", "--steps", "2", "--transformer",
                     (root / transformer_file).string(), "--text-encoder",
                     (root / encoder_file).string(), "--vae",
                     (root / "ae.safetensors").string(), "--output", out});
  };
  auto quantized = run("z_image_turbo_fp8_scaled.safetensors",
                       "qwen3-Q8_0.gguf", quantized_out.path());
  INFO(quantized.err);
  REQUIRE(quantized.exit_code == 0);
  auto twin = run("z_twin.safetensors", "qwen3-twin.gguf", twin_out.path());
  REQUIRE(twin.exit_code == 0);
  const auto a =
      mold::read_png(fs::path(quantized_out.path()) / "z-image-turbo-0.png");
  const auto b =
      mold::read_png(fs::path(twin_out.path()) / "z-image-turbo-0.png");
  CHECK(a.rgb == b.rgb);
}

TEST_CASE("z-image-turbo:q8 --tiny runs its seeded transformer as Q8_0 blocks",
          "[mold][run]") {
  TempDir out;
  auto plan = run_mold({"run", "z-image-turbo:q8", "a fox", "--tiny", "--width",
                        "64", "--height", "32", "--plan", "--json"});
  REQUIRE(plan.exit_code == 0);
  auto bf16 = run_mold({"run", "z-image-turbo", "a fox", "--tiny", "--width",
                        "64", "--height", "32", "--plan", "--json"});
  REQUIRE(bf16.exit_code == 0);
  auto transformer_bytes = [](const std::string& json) {
    const nlohmann::json report = nlohmann::json::parse(json);
    for (const auto& c : report.at("components"))
      if (c.at("component").get<std::string>() == "transformer")
        return c.at("bytes").get<std::uint64_t>();
    return std::uint64_t(0);
  };
  CHECK(transformer_bytes(plan.out) < transformer_bytes(bf16.out) / 2);
  auto r =
      run_mold({"run", "z-image-turbo:q8", "a fox", "--tiny", "--width", "64",
                "--height", "32", "--steps", "2", "--output", out.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto image =
      mold::read_png(fs::path(out.path()) / "z-image-turbo-0.png");
  CHECK(image.text.at("variant") == "q8");
}

TEST_CASE(
    "mold run --transformer --vae --text-encoder makes the seeded "
    "run's image and names each file's layout",
    "[layout][mold][run]") {
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir files, seeded_out, files_out;
  const fs::path root = files.path();
  auto encoder = z.make_text_encoder(tiny);
  encoder->init_from_seed(1);
  mold::test::write_gguf(root / "qwen3.gguf", "qwen3",
                         mold::test::llama_cpp_decoder(*encoder, ""));
  auto transformer = z.make_transformer(tiny);
  transformer->init_from_seed(2);
  mold::save_safetensors(root / "z_image_turbo_bf16.safetensors",
                         mold::test::zimage_comfy_transformer(
                             *transformer, "model.diffusion_model."));
  auto vae = z.make_vae("tiny", 3);
  mold::save_safetensors(root / "ae.safetensors",
                         mold::test::flux_ldm_vae(*vae));
  const std::vector<std::string> common = {
      "run", "z-image-turbo", "a red fox", "--tiny",  "--width",
      "64",  "--height",      "32",        "--steps", "2"};
  const std::vector<std::string> from_files = {
      "--transformer",  (root / "z_image_turbo_bf16.safetensors").string(),
      "--vae",          (root / "ae.safetensors").string(),
      "--text-encoder", (root / "qwen3.gguf").string()};

  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--output");
    args.push_back(out);
    return run_mold(args);
  };
  // Each SECTION runs the case from the top: the runs live in sections so
  // that each runs once.
  SECTION("--plan and --json name each file and its layout") {
    std::vector<std::string> plan_args = from_files;
    plan_args.push_back("--plan");
    auto planned = with(plan_args, files_out.path());
    INFO(planned.err);
    REQUIRE(planned.exit_code == 0);
    CHECK_THAT(planned.out,
               Catch::Contains("ae.safetensors (ldm layout)") &&
                   Catch::Contains("(comfyui layout)") &&
                   Catch::Contains("qwen3.gguf (llama.cpp layout)"));
    plan_args.push_back("--json");
    auto json = with(plan_args, files_out.path());
    REQUIRE(json.exit_code == 0);
    const auto report = nlohmann::json::parse(json.out);
    std::map<std::string, std::string> layouts;
    for (const auto& c : report.at("components"))
      layouts[c.at("component").get<std::string>()] =
          c.at("layout").get<std::string>();
    CHECK(layouts ==
          std::map<std::string, std::string>{{"text_encoder", "llama.cpp"},
                                             {"transformer", "comfyui"},
                                             {"vae", "ldm"}});
  }
  SECTION("the files make the seeded run's image") {
    auto run = with({from_files.begin(), from_files.end()}, files_out.path());
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto seeded = with({}, seeded_out.path());
    REQUIRE(seeded.exit_code == 0);
    const auto a =
        mold::read_png(fs::path(seeded_out.path()) / "z-image-turbo-0.png");
    const auto b =
        mold::read_png(fs::path(files_out.path()) / "z-image-turbo-0.png");
    CHECK(a.rgb == b.rgb);
    CHECK(b.text.at("seeded_weights") == "false");
  }
  SECTION("a file that does not exist names its flag") {
    auto r =
        with({"--vae", (root / "nope.safetensors").string()}, files_out.path());
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err,
               Catch::Contains("--vae") && Catch::Contains("nope.safetensors"));
  }
  SECTION("a VAE file given as the transformer is refused by name") {
    auto r = with({"--transformer", (root / "ae.safetensors").string()},
                  files_out.path());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("ae.safetensors") &&
                          Catch::Contains("missing") &&
                          Catch::Contains("comfyui"));
    CHECK_THAT(r.err, !Catch::Contains("terminate"));
  }
  SECTION("a config's [models.\"MODEL\"] files are used; a flag wins") {
    const fs::path config = root / "config.toml";
    std::ofstream(config)
        << "[models.\"z-image-turbo\"]\n"
           "transformer = \"z_image_turbo_bf16.safetensors\"\n"
           "vae = \"ae.safetensors\"\n"
           "text_encoder = \"missing.gguf\"\n";
    auto r = with({"--config", config.string(), "--text-encoder",
                   (root / "qwen3.gguf").string(), "--plan"},
                  files_out.path());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("ae.safetensors (ldm layout)") &&
                          Catch::Contains("qwen3.gguf (llama.cpp layout)"));
    // Without the flag, the config's missing file is named with its key.
    auto bad = with({"--config", config.string(), "--plan"}, files_out.path());
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err,
               Catch::Contains("models.\"z-image-turbo\".text_encoder") &&
                   Catch::Contains("missing.gguf"));
    std::ofstream(config) << "[models.\"z-image-turbo\"]\nunet = \"x\"\n";
    auto typo = with({"--config", config.string(), "--plan"}, files_out.path());
    CHECK(typo.exit_code != 0);
    CHECK_THAT(typo.err, Catch::Contains("unet"));
  }
  SECTION(
      "a transformer file with NaN weights is named, not blamed on a "
      "latent (exit 1)") {
    NamedTensors broken = mold::test::zimage_comfy_transformer(*transformer);
    for (auto& [name, t] : broken)
      if (name == "layers.0.attention.out.weight")
        t = at::full_like(t, std::numeric_limits<float>::quiet_NaN());
    mold::save_safetensors(root / "z_nan.safetensors", broken);
    auto r = with({"--transformer", (root / "z_nan.safetensors").string()},
                  files_out.path());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("z_nan.safetensors") &&
                          Catch::Contains("not finite") &&
                          !Catch::Contains("the latent has"));
    CHECK_FALSE(fs::exists(fs::path(files_out.path()) / "z-image-turbo-0.png"));
  }
  SECTION("an mmproj without a text encoder file is refused") {
    auto r =
        with({"--mmproj", (root / "qwen3.gguf").string()}, files_out.path());
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("--text-encoder"));
  }
}

TEST_CASE("A ComfyUI models folder is searched by content, not by name",
          "[layout][mold][run]") {
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  const mold::ModelFamily& q = mold::test::real_family("qwen_image");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir models;
  const fs::path root = models.path();
  for (const char* folder :
       {"diffusion_models", "unet", "vae", "text_encoders", "clip"})
    fs::create_directories(root / folder);
  // Names that say nothing, and files of the other family beside them.
  auto transformer = z.make_transformer(tiny);
  transformer->init_from_seed(2);
  mold::save_safetensors(root / "diffusion_models" / "my_favourite.safetensors",
                         mold::test::zimage_comfy_transformer(*transformer));
  auto z_vae = z.make_vae("tiny", 3);
  mold::save_safetensors(root / "vae" / "x.safetensors",
                         mold::test::flux_ldm_vae(*z_vae));
  auto q_vae = q.make_vae("tiny", 3);
  mold::save_safetensors(root / "vae" / "z_image_vae_not.safetensors",
                         mold::test::wan_vae(*q_vae));
  auto encoder = z.make_text_encoder(tiny);
  encoder->init_from_seed(1);
  fs::create_directories(root / "clip" / "sorted");
  mold::test::write_gguf(root / "clip" / "sorted" / "te.gguf", "qwen3",
                         mold::test::llama_cpp_decoder(*encoder, ""));
  auto q_encoder = q.make_text_encoder(tiny);
  q_encoder->init_from_seed(1);
  mold::test::write_gguf(root / "text_encoders" / "qwen25vl.gguf", "qwen2vl",
                         mold::test::llama_cpp_decoder(*q_encoder, "model."));
  mold::test::write_gguf(root / "text_encoders" / "mmproj.gguf", "clip",
                         mold::test::qwen25vl_mmproj(*q_encoder));
  // Not checkpoints at all.
  std::ofstream(root / "vae" / "broken.safetensors") << "not a header";
  std::ofstream(root / "unet" / "empty.gguf");

  const auto z_files = mold::find_component_files(
      root, z.layouts,
      {components::kTransformer, components::kVae, components::kTextEncoder},
      "z-image-turbo");
  CHECK(z_files.at(components::kTransformer).filename() ==
        "my_favourite.safetensors");
  CHECK(z_files.at(components::kVae).filename() == "x.safetensors");
  CHECK(z_files.at(components::kTextEncoder).filename() == "te.gguf");
  CHECK_FALSE(z_files.count("mmproj"));

  const auto q_files = mold::find_component_files(
      root, q.layouts, {components::kVae, components::kTextEncoder},
      "qwen-image-edit-2511");
  CHECK(q_files.at(components::kVae).filename() ==
        "z_image_vae_not.safetensors");
  CHECK(q_files.at(components::kTextEncoder).filename() == "qwen25vl.gguf");
  CHECK(q_files.at("mmproj").filename() == "mmproj.gguf");

  SECTION("two equally good files are an error naming both") {
    fs::copy_file(root / "vae" / "x.safetensors",
                  root / "vae" / "y.safetensors");
    CHECK_THROWS_WITH(mold::find_component_files(
                          root, z.layouts, {components::kVae}, "z-image-turbo"),
                      Catch::Contains("x.safetensors") &&
                          Catch::Contains("y.safetensors") &&
                          Catch::Contains("--vae"));
    // A file named for the model wins.
    fs::copy_file(root / "vae" / "x.safetensors",
                  root / "vae" / "z_image_ae.safetensors");
    CHECK(mold::find_component_files(root, z.layouts, {components::kVae},
                                     "z-image-turbo")
              .at(components::kVae)
              .filename() == "z_image_ae.safetensors");
  }
  SECTION(
      "mold run --model-dir FOLDER finds them, and checks them against "
      "the published architecture before planning") {
    // The files are tiny; without --tiny the model is the published one, so
    // the file found for the text encoder is refused by name, before a plan.
    auto r = run_mold({"run", "z-image-turbo", "a fox", "--model-dir",
                       root.string(), "--plan"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("te.gguf (llama.cpp layout)") &&
                          Catch::Contains("missing") &&
                          Catch::Contains("default"));
    CHECK_THAT(r.err, !Catch::Contains("terminate"));
  }
}

TEST_CASE(
    "molddiag inspect names a file's layout and what it fits, and "
    "refuses what is no checkpoint",
    "[layout][molddiag]") {
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  TempDir dir;
  const fs::path root = dir.path();
  auto transformer = z.make_transformer(mold::ArchSpec::parse("tiny"));
  transformer->init_from_seed(2);
  const fs::path comfy = root / "z.safetensors";
  mold::save_safetensors(comfy,
                         mold::test::zimage_comfy_transformer(*transformer));
  auto r =
      mold::test::run_molddiag({"inspect", comfy.string(), "--arch", "tiny"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("zimage transformer: comfyui layout") &&
                        Catch::Contains("1 tensor dropped") &&
                        Catch::Contains("loads: every tensor of"));
  auto json = mold::test::run_molddiag(
      {"inspect", comfy.string(), "--json", "--arch", "tiny"});
  REQUIRE(json.exit_code == 0);
  const auto report = nlohmann::json::parse(json.out);
  REQUIRE(report.at("fits").size() == 1);
  CHECK(report.at("fits")[0].at("layout") == "comfyui");
  CHECK(report.at("fits")[0].at("check").at("loads") == true);
  CHECK(report.at("loads") == true);
  CHECK(report.at("types").at("F32").at("tensors") ==
        report.at("tensors").get<int>());

  SECTION("against the published architecture every shape is named; exit 7") {
    auto d = mold::test::run_molddiag({"inspect", comfy.string()});
    CHECK(d.exit_code == 7);
    CHECK_THAT(d.out, Catch::Contains("does not load as") &&
                          Catch::Contains(" mis-shaped: '") &&
                          Catch::Contains("--arch tiny"));
  }
  SECTION("missing, mis-shaped and unexpected tensors, each named; exit 7") {
    auto tensors = mold::test::zimage_comfy_transformer(*transformer);
    std::size_t dropped = 0;
    for (auto it = tensors.begin(); it != tensors.end();) {
      if (it->first == "layers.0.feed_forward.w2.weight" ||
          it->first == "noise_refiner.0.ffn_norm1.weight") {
        it = tensors.erase(it);
        ++dropped;
      } else {
        if (it->first == "cap_embedder.1.bias")
          it->second = at::zeros({it->second.size(0) + 1});
        ++it;
      }
    }
    REQUIRE(dropped == 2);
    const fs::path broken = root / "broken.safetensors";
    mold::save_safetensors(broken, tensors);
    auto b = mold::test::run_molddiag(
        {"inspect", broken.string(), "--arch", "tiny"});
    INFO(b.out);
    CHECK(b.exit_code == 7);
    CHECK_THAT(b.out,
               Catch::Contains("2 missing: 'layers.0.feed_forward.w2.weight', "
                               "'noise_refiner.0.ffn_norm1.weight'") &&
                   Catch::Contains("1 mis-shaped: 'cap_embedder.1.bias' is"));
    auto j = mold::test::run_molddiag(
        {"inspect", broken.string(), "--arch", "tiny", "--json"});
    CHECK(j.exit_code == 7);
    const auto check = nlohmann::json::parse(j.out).at("fits")[0].at("check");
    CHECK(check.at("loads") == false);
    CHECK(check.at("missing_count") == 2);
    CHECK(check.at("misshaped")[0].at("tensor") == "cap_embedder.1.bias");
    // Unexpected tensors alone (diffusers' names, which ignore them on load
    // with a warning): it loads, exit 0, and they are named.
    NamedTensors extra;
    for (const auto& [name, t] : transformer->parameters())
      extra.emplace_back(name, t);
    extra.emplace_back("layers.0.extra.weight", at::zeros({2, 2}));
    const fs::path more = root / "more.safetensors";
    mold::save_safetensors(more, extra);
    auto m =
        mold::test::run_molddiag({"inspect", more.string(), "--arch", "tiny"});
    INFO(m.out);
    INFO(m.err);
    CHECK(m.exit_code == 0);
    CHECK_THAT(m.out, Catch::Contains("loads (with warnings) as") &&
                          Catch::Contains("1 unexpected (ignored on load): "
                                          "'layers.0.extra.weight'"));
  }

  SECTION(
      "a layer the model lacks: each stored tensor counted once, a "
      "fused qkv too") {
    auto tensors = mold::test::zimage_comfy_transformer(*transformer);
    int layers = 0;
    for (const auto& [name, t] : tensors)
      if (name.rfind("layers.", 0) == 0)
        layers = std::max(layers, std::stoi(name.substr(7)) + 1);
    const std::string third = "layers." + std::to_string(layers) + ".";
    std::size_t copied = 0;
    NamedTensors with_extra = tensors;
    for (const auto& [name, t] : tensors)
      if (name.rfind("layers.0.", 0) == 0) {
        with_extra.emplace_back(third + name.substr(9), t);
        ++copied;
      }
    REQUIRE(copied > 3);
    const fs::path more = root / "extra_layer.safetensors";
    mold::save_safetensors(more, with_extra);
    auto j = mold::test::run_molddiag(
        {"inspect", more.string(), "--arch", "tiny", "--json"});
    INFO(j.err);
    CHECK(j.exit_code == 0);
    const auto check = nlohmann::json::parse(j.out).at("fits")[0].at("check");
    CHECK(check.at("unexpected_count") == copied);
    const auto& names = check.at("unexpected");
    CHECK(std::count(names.begin(), names.end(),
                     third + "attention.qkv.weight") == 1);
    auto t =
        mold::test::run_molddiag({"inspect", more.string(), "--arch", "tiny"});
    CHECK_THAT(t.out, Catch::Contains(std::to_string(copied) +
                                      " unexpected (ignored on load)"));
  }

  SECTION("two layouts mixed: it does not fit, and says why") {
    auto tensors = mold::test::zimage_comfy_transformer(*transformer);
    tensors.emplace_back("layers.0.attention.to_q.weight", at::zeros({64, 64}));
    const fs::path mixed = root / "mixed.safetensors";
    mold::save_safetensors(mixed, tensors);
    auto m = mold::test::run_molddiag({"inspect", mixed.string()});
    CHECK(m.exit_code == 7);  // read, and nothing would load it
    CHECK_THAT(m.out, Catch::Contains("does not fit") &&
                          Catch::Contains("two layouts"));
  }
  SECTION(
      "an fp8 file: its scales counted; another quantization refused "
      "naming its tensor") {
    const fs::path fp8 = root / "z_fp8_scaled.safetensors";
    mold::test::write_fp8_safetensors(
        fp8, mold::test::zimage_comfy_transformer(*transformer),
        mold::test::Fp8Scales::scale_weight);
    auto f =
        mold::test::run_molddiag({"inspect", fp8.string(), "--arch", "tiny"});
    INFO(f.err);
    REQUIRE(f.exit_code == 0);
    CHECK_THAT(f.out, Catch::Contains("F8_E4M3") &&
                          Catch::Contains("zimage transformer: comfyui") &&
                          Catch::Contains("weights times a scale"));
    const fs::path nvfp4 = root / "z_nvfp4.safetensors";
    mold::test::write_raw_safetensors(
        nvfp4, {{"layers.0.attention.qkv.weight", "U8", {2, 2}, {1, 2, 3, 4}},
                {"layers.0.attention.qkv.weight_scale_2",
                 "F32",
                 {},
                 {0, 0, 128, 63}}});
    auto n = mold::test::run_molddiag({"inspect", nvfp4.string()});
    CHECK(n.exit_code == 1);
    CHECK_THAT(n.err, Catch::Contains("weight_scale_2") &&
                          Catch::Contains("nvfp4") &&
                          !Catch::Contains("terminate"));
  }
  SECTION("hostile files exit 1 naming the file, never hang") {
    const fs::path fifo = root / "pipe.safetensors";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const fs::path folder = root / "folder.gguf";
    fs::create_directories(folder);
    const fs::path huge = root / "huge.safetensors";
    {
      std::ofstream out(huge, std::ios::binary);
      const std::uint64_t header = std::uint64_t(1) << 40;
      out.write(reinterpret_cast<const char*>(&header), 8);
      out << std::string(1024, ' ');
    }
    for (const fs::path& bad : {fifo, folder, huge, root / "missing.gguf"}) {
      INFO(bad);
      auto b = mold::test::run_molddiag({"inspect", bad.string()});
      CHECK(b.exit_code == 1);
      CHECK_THAT(b.err, Catch::Contains(bad.filename().string()));
      CHECK_THAT(b.err, !Catch::Contains("terminate"));
    }
  }
}
