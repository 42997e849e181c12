// Checkpoints in the layouts people download, written by the inverse of each
// mapping (support/foreign_layouts.hpp) from seeded tiny models, load to the
// same parameters bit for bit, and quantized ones to the same blocks as a
// diffusers-named GGUF (in process; tests/cli/foreign_layout_test.cpp runs
// mold with such files).

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
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
#include <mold/tensor/gguf_file.hpp>
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

/// Loads `files` into `module` as mold run does: the layout detected among
/// the family's, then streamed by its mapping.
std::string load_detected(mold::Module& module, const std::string& family_name,
                          const std::string& component,
                          const std::vector<fs::path>& files) {
  const mold::Checkpoint checkpoint = mold::Checkpoint::open(files);
  const auto mapping =
      mold::detect_layout(mold::test::real_family(family_name).layouts,
                          component, checkpoint.listing(), module.describe());
  REQUIRE(mapping);
  const mold::LoadReport report =
      module.load(checkpoint, *mapping, c10::Device(c10::kCPU), at::kFloat);
  CHECK(report.unexpected_count == 0);
  return mapping->layout;
}

void check_identical(const mold::Module& expected, const mold::Module& loaded) {
  REQUIRE(expected.parameters().size() == loaded.parameters().size());
  for (const auto& [name, t] : expected.parameters()) {
    INFO(name);
    if (expected.is_quantized(name)) {
      REQUIRE(loaded.is_quantized(name));
      CHECK(at::equal(expected.quantized().at(name).blocks,
                      loaded.quantized().at(name).blocks));
      continue;
    }
    REQUIRE_FALSE(loaded.is_quantized(name));
    CHECK(at::equal(t, loaded.parameters().at(name)));
  }
}

}  // namespace

TEST_CASE(
    "Z-Image's components load bit for bit from ComfyUI, LDM and "
    "llama.cpp files",
    "[layout][zimage]") {
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir dir;
  const fs::path root = dir.path();

  auto transformer = z.make_transformer(tiny);
  transformer->init_from_seed(2);
  for (const std::string prefix : {"", "model.diffusion_model."}) {
    const fs::path file = root / ("comfy" + prefix + "safetensors");
    mold::save_safetensors(
        file, mold::test::zimage_comfy_transformer(*transformer, prefix));
    auto loaded = z.make_transformer(tiny);
    CHECK(load_detected(*loaded, "zimage", components::kTransformer, {file}) ==
          "comfyui");
    check_identical(*transformer, *loaded);
  }
  // As a lumina2 GGUF with Q8_0 blocks: the split qkv gives the blocks a
  // diffusers-named GGUF of the same weights holds.
  {
    const fs::path comfy = root / "z_image_turbo-Q8_0.gguf";
    mold::test::write_gguf(comfy, "lumina2",
                           mold::test::zimage_comfy_transformer(*transformer),
                           /*q8=*/true);
    NamedTensors own;
    for (const auto& [name, t] : transformer->parameters())
      own.emplace_back(name, t);
    const fs::path diffusers = root / "diffusers-Q8_0.gguf";
    mold::test::write_gguf(diffusers, "lumina2", own, /*q8=*/true);
    auto from_comfy = z.make_transformer(tiny);
    CHECK(load_detected(*from_comfy, "zimage", components::kTransformer,
                        {comfy}) == "comfyui");
    auto from_diffusers = z.make_transformer(tiny);
    from_diffusers->load_gguf(mold::GgufFile::open(diffusers),
                              c10::Device(c10::kCPU), at::kFloat);
    CHECK_FALSE(from_comfy->quantized().empty());
    check_identical(*from_diffusers, *from_comfy);
  }

  // As stable-diffusion.cpp's converter writes it: no architecture, ComfyUI's
  // names with their prefix, the pad tokens as vectors [dim] (the model holds
  // [1, dim]).
  {
    NamedTensors sd_cpp = mold::test::zimage_comfy_transformer(
        *transformer, "model.diffusion_model.");
    int flattened = 0;
    for (auto& [name, t] : sd_cpp)
      if (name == "model.diffusion_model.x_pad_token" ||
          name == "model.diffusion_model.cap_pad_token") {
        t = t.reshape({-1});
        ++flattened;
      }
    REQUIRE(flattened == 2);
    const fs::path file = root / "z_image_turbo-sd-cpp.gguf";
    mold::test::write_gguf(file, "", sd_cpp);
    REQUIRE(mold::GgufFile::open(file).find("general.architecture") == nullptr);
    auto loaded = z.make_transformer(tiny);
    CHECK(load_detected(*loaded, "zimage", components::kTransformer, {file}) ==
          "comfyui");
    check_identical(*transformer, *loaded);
    CHECK(loaded->parameters().at("cap_pad_token").sizes() ==
          transformer->parameters().at("cap_pad_token").sizes());
  }

  auto vae = z.make_vae("tiny", 3);
  const fs::path ae = root / "ae.safetensors";
  mold::save_safetensors(ae, mold::test::flux_ldm_vae(*vae));
  auto vae_loaded = z.make_vae("tiny", 99);
  CHECK(load_detected(*vae_loaded, "zimage", components::kVae, {ae}) == "ldm");
  check_identical(*vae, *vae_loaded);

  auto encoder = z.make_text_encoder(tiny);
  encoder->init_from_seed(1);
  const fs::path gguf = root / "qwen3.gguf";
  mold::test::write_gguf(gguf, "qwen3",
                         mold::test::llama_cpp_decoder(*encoder, ""));
  auto encoder_loaded = z.make_text_encoder(tiny);
  CHECK(load_detected(*encoder_loaded, "zimage", components::kTextEncoder,
                      {gguf}) == "llama.cpp");
  check_identical(*encoder, *encoder_loaded);
}

TEST_CASE(
    "Qwen-Image's components load bit for bit from Wan, prefixed and "
    "llama.cpp files with the mmproj",
    "[layout][qwen_image]") {
  const mold::ModelFamily& q = mold::test::real_family("qwen_image");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir dir;
  const fs::path root = dir.path();

  auto vae = q.make_vae("tiny", 3);
  const fs::path wan = root / "qwen_image_vae.safetensors";
  mold::save_safetensors(wan, mold::test::wan_vae(*vae));
  auto vae_loaded = q.make_vae("tiny", 99);
  CHECK(load_detected(*vae_loaded, "qwen_image", components::kVae, {wan}) ==
        "wan");
  check_identical(*vae, *vae_loaded);

  auto transformer = q.make_transformer(tiny);
  transformer->init_from_seed(2);
  NamedTensors prefixed;
  for (const auto& [name, t] : transformer->parameters())
    prefixed.emplace_back("model.diffusion_model." + name, t);
  prefixed.emplace_back("model.diffusion_model.__index_timestep_zero__",
                        at::empty({0}));
  const fs::path single = root / "qwen_image_edit_2511_bf16.safetensors";
  mold::save_safetensors(single, prefixed);
  auto transformer_loaded = q.make_transformer(tiny);
  CHECK(load_detected(*transformer_loaded, "qwen_image",
                      components::kTransformer, {single}) == "diffusers");
  check_identical(*transformer, *transformer_loaded);

  auto encoder = q.make_text_encoder(tiny);
  encoder->init_from_seed(1);
  const fs::path text = root / "Qwen2.5-VL-7B-Instruct-Q8_0.gguf";
  const fs::path mmproj = root / "mmproj-F32.gguf";
  mold::test::write_gguf(text, "qwen2vl",
                         mold::test::llama_cpp_decoder(*encoder, "model."),
                         /*q8=*/true);
  mold::test::write_gguf(mmproj, "clip", mold::test::qwen25vl_mmproj(*encoder));
  auto encoder_loaded = q.make_text_encoder(tiny);
  CHECK(load_detected(*encoder_loaded, "qwen_image", components::kTextEncoder,
                      {text, mmproj}) == "llama.cpp");
  // The language model's matrices stay Q8_0 blocks; compare the vision
  // tower and every value the file stores as floats.
  for (const auto& [name, t] : encoder->parameters()) {
    INFO(name);
    if (encoder_loaded->is_quantized(name)) continue;
    CHECK(at::equal(t, encoder_loaded->parameters().at(name)));
  }
  CHECK(at::equal(
      encoder->parameters().at("visual.blocks.0.attn.qkv.weight"),
      encoder_loaded->parameters().at("visual.blocks.0.attn.qkv.weight")));

  SECTION(
      "a text_encoder/ folder with the text GGUF and its mmproj loads "
      "both") {
    const fs::path folder = root / "text_encoder";
    fs::create_directories(folder);
    fs::copy_file(text, folder / text.filename());
    fs::copy_file(mmproj, folder / mmproj.filename());
    CHECK(mold::gguf_checkpoint(folder) == folder / text.filename());
    mold::WeightSource source;
    source.checkpoint = folder;
    source.layouts = q.layouts;
    mold::ModuleComponent component(components::kTextEncoder,
                                    q.make_text_encoder(tiny), source,
                                    at::kFloat);
    REQUIRE(component.mapping());
    CHECK(component.mapping()->layout == "llama.cpp");
    component.load(*mold::CpuBackend::instance());
    CHECK(at::equal(
        encoder->parameters().at("visual.patch_embed.proj.weight"),
        component.module().parameters().at("visual.patch_embed.proj.weight")));
  }
  SECTION("the text GGUF alone says to give the mmproj") {
    auto alone = q.make_text_encoder(tiny);
    const mold::Checkpoint checkpoint = mold::Checkpoint::open({text});
    const auto mapping =
        mold::detect_layout(q.layouts, components::kTextEncoder,
                            checkpoint.listing(), alone->describe());
    REQUIRE(mapping);
    CHECK_THROWS_WITH(
        alone->load(checkpoint, *mapping, c10::Device(c10::kCPU), at::kFloat),
        Catch::Contains("--mmproj") && Catch::Contains("visual."));
  }
  SECTION("the mmproj alone is refused") {
    const mold::Checkpoint checkpoint = mold::Checkpoint::open({mmproj});
    CHECK_THROWS_WITH(
        mold::detect_layout(q.layouts, components::kTextEncoder,
                            checkpoint.listing(), "x"),
        Catch::Contains("--text-encoder") && Catch::Contains("mmproj"));
  }
}

namespace {

/// `loaded`'s parameters equal `twin`'s, reading fp8 weights kept as bytes
/// through dequantize() (and by tensor operations, as on a GPU).
void check_decoded(const mold::Module& twin, const mold::Module& loaded,
                   at::ScalarType dtype) {
  REQUIRE(twin.parameters().size() == loaded.parameters().size());
  for (const auto& [name, t] : twin.parameters()) {
    INFO(name);
    if (!loaded.is_quantized(name)) {
      CHECK(at::equal(t, loaded.parameters().at(name)));
      continue;
    }
    const mold::QuantizedTensor& q = loaded.quantized().at(name);
    REQUIRE(q.float8);
    CHECK(at::equal(t, mold::dequantize(q, dtype)));
    CHECK(at::equal(t, mold::dequantize_by_tensor_ops(q, dtype)));
  }
}

}  // namespace

TEST_CASE(
    "fp8 checkpoints load as their float8 values times their scales, kept "
    "as bytes",
    "[layout][float8]") {
  using mold::test::Fp8Scales;
  const mold::ModelFamily& z = mold::test::real_family("zimage");
  const mold::ArchSpec tiny = mold::ArchSpec::parse("tiny");
  TempDir dir;
  const fs::path root = dir.path();
  auto transformer = z.make_transformer(tiny);
  transformer->init_from_seed(2);
  const std::string prefix = "model.diffusion_model.";
  const NamedTensors comfy =
      mold::test::zimage_comfy_transformer(*transformer, prefix);

  struct Case {
    Fp8Scales scales;
    mold::Float8Format format;
    at::ScalarType dtype;
  };
  for (const Case c :
       {Case{Fp8Scales::none, mold::Float8Format::e4m3fn, at::kFloat},
        Case{Fp8Scales::scale_weight, mold::Float8Format::e4m3fn,
             at::kBFloat16},
        Case{Fp8Scales::weight_scale, mold::Float8Format::e4m3fn, at::kFloat},
        Case{Fp8Scales::scale_weight, mold::Float8Format::e5m2, at::kFloat}}) {
    INFO("scales " << int(c.scales) << ", format " << int(c.format));
    const fs::path file = root / "z_image_turbo_fp8.safetensors";
    const fs::path twin_file = root / "decoded.safetensors";
    const NamedTensors decoded = mold::test::write_fp8_safetensors(
        file, comfy, c.scales, c.format, prefix);
    mold::save_safetensors(twin_file, decoded);

    const mold::Checkpoint checkpoint = mold::Checkpoint::open({file});
    auto loaded = z.make_transformer(tiny);
    const auto mapping =
        mold::detect_layout(z.layouts, components::kTransformer,
                            checkpoint.listing(), loaded->describe());
    REQUIRE(mapping);
    CHECK(mapping->layout == "comfyui");
    const mold::LoadReport report =
        loaded->load(checkpoint, *mapping, c10::Device(c10::kCPU), c.dtype);
    CHECK(report.unexpected_count == 0);
    // The fused qkv is split by rows, its bytes and its scales.
    REQUIRE(loaded->is_quantized("layers.0.attention.to_q.weight"));
    CHECK(report.bytes == loaded->resident_bytes());
    CHECK(report.bytes ==
          loaded->loaded_bytes(checkpoint.listing(), *mapping, c.dtype));
    CHECK(report.bytes < transformer->parameter_bytes(c.dtype));

    auto twin = z.make_transformer(tiny);
    CHECK(load_detected(*twin, "zimage", components::kTransformer,
                        {twin_file}) == "comfyui");
    twin->to(c10::Device(c10::kCPU), c.dtype);
    check_decoded(*twin, *loaded, c.dtype);
  }

  SECTION("an fp8 VAE's convolutions are decoded and scaled on load") {
    auto vae = z.make_vae("tiny", 3);
    const fs::path file = root / "vae_fp8.safetensors";
    const fs::path twin_file = root / "vae_decoded.safetensors";
    NamedTensors own;
    for (const auto& [name, t] : vae->parameters()) own.emplace_back(name, t);
    mold::save_safetensors(twin_file, mold::test::write_fp8_safetensors(
                                          file, own, Fp8Scales::weight_scale));
    auto loaded = z.make_vae("tiny", 99);
    CHECK(load_detected(*loaded, "zimage", components::kVae, {file}) ==
          "diffusers");
    auto twin = z.make_vae("tiny", 98);
    load_detected(*twin, "zimage", components::kVae, {twin_file});
    CHECK(loaded->quantized().empty());  // convolutions: values
    check_decoded(*twin, *loaded, at::kFloat);
  }
}
