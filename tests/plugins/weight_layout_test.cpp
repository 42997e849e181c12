// The layouts the family plugins register, applied to the names and shapes of
// the published checkpoints as people download them (tests/data listings,
// sources in tests/data/README.md): each mapping must give exactly the
// diffusers/transformers listing the models declare: the same names, the same
// shapes, nothing left over. And files of no layout, of two, or with a fused
// tensor missing or of the wrong height are refused by name.

#include <catch2/catch.hpp>
#include <mold/catalog/components.hpp>
#include <mold/catalog/llama_cpp_names.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/catalog/weight_layout.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <string>
#include <vector>

#include "support/state_dict_listing.hpp"
#include "support/test_registry.hpp"

namespace {

using mold::LayoutError;
using mold::LayoutMapping;
using mold::StoredTensor;
using mold::TensorListing;
using mold::test::read_state_dict_listing;
using mold::test::ShapeMap;
namespace components = mold::components;

std::vector<StoredTensor> stored(const ShapeMap& shapes,
                                 const std::string& prefix = "",
                                 const std::string& type = "BF16") {
  std::vector<StoredTensor> out;
  std::uint64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    StoredTensor t;
    t.name = prefix + name;
    t.shape = shape;
    t.type = type;
    t.bytes = std::uint64_t(t.elements()) * 2;
    t.offset = offset;
    offset += t.bytes;
    out.push_back(t);
  }
  return out;
}

TensorListing safetensors_listing(const ShapeMap& shapes,
                                  const std::string& prefix = "") {
  TensorListing listing;
  listing.add_file("model.safetensors", std::nullopt, stored(shapes, prefix));
  return listing;
}

const std::vector<mold::WeightLayout>& layouts_of(const std::string& family) {
  const mold::ModelFamily* f = mold::test::real_plugins().family(family);
  REQUIRE(f);
  return f->layouts;
}

LayoutMapping detect(const std::string& family, const std::string& component,
                     const TensorListing& listing) {
  auto mapping = mold::detect_layout(layouts_of(family), component, listing,
                                     family + " " + component);
  REQUIRE(mapping);
  return *mapping;
}

/// What the mapping makes: target -> shape.
ShapeMap mapped(const LayoutMapping& mapping) {
  ShapeMap out;
  for (const auto& r : mapping.recipes) out[r.target] = r.shape;
  return out;
}

ShapeMap without_prefix(const ShapeMap& shapes, const std::string& prefix) {
  ShapeMap out;
  for (const auto& [name, shape] : shapes) {
    REQUIRE(name.rfind(prefix, 0) == 0);
    out[name.substr(prefix.size())] = shape;
  }
  return out;
}

}  // namespace

TEST_CASE("Z-Image's ComfyUI transformer maps to diffusers' names and shapes",
          "[layout][zimage]") {
  const ShapeMap comfy =
      read_state_dict_listing("zimage_transformer_comfy_state_dict.tsv");
  const ShapeMap diffusers =
      read_state_dict_listing("zimage_transformer_state_dict.tsv");
  for (const std::string prefix : {"", "model.diffusion_model."}) {
    INFO("prefix '" << prefix << "'");
    const LayoutMapping mapping = detect("zimage", components::kTransformer,
                                         safetensors_listing(comfy, prefix));
    CHECK(mapping.layout == "comfyui");
    CHECK(mapping.prefix == prefix);
    CHECK(mapping.unmapped.empty());
    mold::test::check_same_state_dict(diffusers, mapped(mapping));
  }
  // The qkv splits into thirds by rows, in order.
  const LayoutMapping mapping =
      detect("zimage", components::kTransformer, safetensors_listing(comfy));
  const auto* k = mapping.recipe("layers.7.attention.to_k.weight");
  REQUIRE(k);
  CHECK(k->op == mold::TensorOp::rows);
  CHECK(k->sources ==
        std::vector<std::string>{"layers.7.attention.qkv.weight"});
  CHECK(k->row_begin == 3840);
  CHECK(k->row_end == 7680);
  // The published GGUFs: the same names, general.architecture lumina2.
  TensorListing gguf;
  gguf.add_file("z_image_turbo-Q3_K_S.gguf", std::string("lumina2"),
                stored(comfy));
  mold::test::check_same_state_dict(
      diffusers, mapped(detect("zimage", components::kTransformer, gguf)));
  // diffusers' own names are the diffusers layout.
  CHECK(
      detect("zimage", components::kTransformer, safetensors_listing(diffusers))
          .layout == "diffusers");
}

TEST_CASE("The FLUX VAE's LDM names (ae.safetensors) map to diffusers'",
          "[layout][zimage]") {
  const ShapeMap ldm =
      read_state_dict_listing("zimage_flux_vae_ldm_state_dict.tsv");
  const ShapeMap diffusers =
      read_state_dict_listing("zimage_flux_vae_state_dict.tsv");
  const LayoutMapping mapping =
      detect("zimage", components::kVae, safetensors_listing(ldm));
  CHECK(mapping.layout == "ldm");
  mold::test::check_same_state_dict(diffusers, mapped(mapping));
  // up.3 is diffusers' up_blocks.0 (the lowest resolution first).
  const auto* up =
      mapping.recipe("decoder.up_blocks.0.upsamplers.0.conv.weight");
  REQUIRE(up);
  CHECK(up->sources.front() == "decoder.up.3.upsample.conv.weight");
  CHECK(detect("zimage", components::kVae, safetensors_listing(diffusers))
            .layout == "diffusers");
}

TEST_CASE("Qwen3 as a llama.cpp GGUF maps to transformers' names",
          "[layout][zimage]") {
  const ShapeMap gguf_names =
      read_state_dict_listing("zimage_qwen3_gguf_tensors.tsv");
  const ShapeMap transformers =
      read_state_dict_listing("zimage_qwen3_text_encoder_state_dict.tsv");
  TensorListing gguf;
  gguf.add_file("Qwen3-4B-Q4_K_M.gguf", std::string("qwen3"),
                stored(gguf_names));
  const LayoutMapping mapping =
      detect("zimage", components::kTextEncoder, gguf);
  CHECK(mapping.layout == "llama.cpp");
  // The module's names are Qwen3Model's, without the ForCausalLM "model.".
  mold::test::check_same_state_dict(without_prefix(transformers, "model."),
                                    mapped(mapping));
  const LayoutMapping own = detect("zimage", components::kTextEncoder,
                                   safetensors_listing(transformers));
  CHECK(own.layout == "transformers");
  CHECK(own.prefix == "model.");
  // A GGUF of another architecture is no Qwen3 GGUF.
  TensorListing llama;
  llama.add_file("other.gguf", std::string("llama"), stored(gguf_names));
  CHECK_FALSE(mold::detect_layout(layouts_of("zimage"),
                                  components::kTextEncoder, llama, "x"));
}

TEST_CASE("The Wan VAE names (ComfyUI's qwen_image_vae) map to diffusers'",
          "[layout][qwen_image]") {
  const ShapeMap wan =
      read_state_dict_listing("qwen_image_vae_wan_state_dict.tsv");
  const ShapeMap diffusers =
      read_state_dict_listing("qwen_image_vae_state_dict.tsv");
  const LayoutMapping mapping =
      detect("qwen_image", components::kVae, safetensors_listing(wan));
  CHECK(mapping.layout == "wan");
  mold::test::check_same_state_dict(diffusers, mapped(mapping));
  const auto* up = mapping.recipe("decoder.up_blocks.2.resnets.1.conv2.weight");
  REQUIRE(up);
  CHECK(up->sources.front() == "decoder.upsamples.9.residual.6.weight");
  CHECK(detect("qwen_image", components::kVae, safetensors_listing(diffusers))
            .layout == "diffusers");
}

TEST_CASE("Qwen2.5-VL's llama.cpp text GGUF and mmproj map to transformers'",
          "[layout][qwen_image]") {
  const ShapeMap text =
      read_state_dict_listing("qwen25vl_text_gguf_tensors.tsv");
  const ShapeMap mmproj =
      read_state_dict_listing("qwen25vl_mmproj_gguf_tensors.tsv");
  const ShapeMap transformers =
      read_state_dict_listing("qwen25vl_text_encoder_state_dict.tsv");
  TensorListing both;
  both.add_file("Qwen2.5-VL-7B-Instruct-Q4_K_M.gguf", std::string("qwen2vl"),
                stored(text));
  both.add_file("mmproj-F16.gguf", std::string("clip"), stored(mmproj));
  const LayoutMapping mapping =
      detect("qwen_image", components::kTextEncoder, both);
  CHECK(mapping.layout == "llama.cpp");
  mold::test::check_same_state_dict(transformers, mapped(mapping));
  const auto* qkv = mapping.recipe("visual.blocks.3.attn.qkv.weight");
  REQUIRE(qkv);
  CHECK(qkv->op == mold::TensorOp::concat);
  CHECK(qkv->sources == std::vector<std::string>{"v.blk.3.attn_q.weight",
                                                 "v.blk.3.attn_k.weight",
                                                 "v.blk.3.attn_v.weight"});
  const auto* patch = mapping.recipe("visual.patch_embed.proj.weight");
  REQUIRE(patch);
  CHECK(patch->op == mold::TensorOp::stack);
  CHECK(patch->shape == std::vector<std::int64_t>{1280, 3, 2, 14, 14});

  // The text GGUF alone maps the language model and says where the vision
  // tower is.
  TensorListing alone;
  alone.add_file("text.gguf", std::string("qwen2vl"), stored(text));
  const LayoutMapping text_only =
      detect("qwen_image", components::kTextEncoder, alone);
  CHECK(text_only.missing_hint.find("--mmproj") != std::string::npos);
  // The mmproj alone is refused, naming what to give.
  TensorListing vision;
  vision.add_file("mmproj-F16.gguf", std::string("clip"), stored(mmproj));
  CHECK_THROWS_WITH(
      mold::detect_layout(layouts_of("qwen_image"), components::kTextEncoder,
                          vision, "x"),
      Catch::Contains("mmproj") && Catch::Contains("--text-encoder"));
}

TEST_CASE("Qwen-Image's transformer files: a prefix, and Edit-2511's marker",
          "[layout][qwen_image]") {
  ShapeMap diffusers =
      read_state_dict_listing("qwen_image_transformer_state_dict.tsv");
  diffusers["__index_timestep_zero__"] = {0};
  const LayoutMapping mapping =
      detect("qwen_image", components::kTransformer,
             safetensors_listing(diffusers, "model.diffusion_model."));
  CHECK(mapping.prefix == "model.diffusion_model.");
  CHECK(mapping.dropped ==
        std::vector<std::string>{
            "model.diffusion_model.__index_timestep_zero__"});
  REQUIRE(mapping.implies.size() == 1);
  CHECK(mapping.implies[0].first == "zero_cond_t");
  CHECK_FALSE(mapping.recipe("__index_timestep_zero__"));
}

TEST_CASE(
    "Files of no layout, two layouts, or broken fused tensors are "
    "refused by name",
    "[layout]") {
  const ShapeMap comfy =
      read_state_dict_listing("zimage_transformer_comfy_state_dict.tsv");
  const ShapeMap diffusers =
      read_state_dict_listing("zimage_transformer_state_dict.tsv");
  SECTION("an all-in-one checkpoint names its parts and what to give") {
    ShapeMap aio;
    for (const auto& [name, shape] : comfy)
      aio["model.diffusion_model." + name] = shape;
    aio["first_stage_model.encoder.conv_in.weight"] = {128, 3, 3, 3};
    aio["text_encoders.qwen3_4b.transformer.model.norm.weight"] = {2560};
    for (const char* component :
         {components::kTransformer, components::kVae, components::kTextEncoder})
      CHECK_THROWS_WITH(
          mold::detect_layout(layouts_of("zimage"), component,
                              safetensors_listing(aio), component),
          Catch::Contains("all-in-one") &&
              Catch::Contains("first_stage_model.*") &&
              Catch::Contains("text_encoders.*") &&
              Catch::Contains("--transformer, --vae, --text-encoder"));
  }
  SECTION("two layouts mixed in one file") {
    ShapeMap mixed = comfy;
    mixed["layers.0.attention.to_q.weight"] = {3840, 3840};
    CHECK_THROWS_WITH(
        mold::detect_layout(layouts_of("zimage"), components::kTransformer,
                            safetensors_listing(mixed), "the transformer"),
        Catch::Contains("two layouts") && Catch::Contains("comfyui") &&
            Catch::Contains("diffusers"));
  }
  SECTION("a tensor of no rule in a ComfyUI file") {
    ShapeMap extra = comfy;
    extra["layers.0.attention.rope.weight"] = {8};
    CHECK_THROWS_WITH(
        mold::detect_layout(layouts_of("zimage"), components::kTransformer,
                            safetensors_listing(extra), "the transformer"),
        Catch::Contains("layers.0.attention.rope.weight") &&
            Catch::Contains("comfyui"));
  }
  SECTION("a qkv whose rows do not split in three") {
    ShapeMap bad = comfy;
    bad["layers.2.attention.qkv.weight"] = {11519, 3840};
    CHECK_THROWS_AS(
        mold::detect_layout(layouts_of("zimage"), components::kTransformer,
                            safetensors_listing(bad), "the transformer"),
        LayoutError);
  }
  SECTION("a missing fused tensor leaves its three parameters unmade") {
    ShapeMap missing = comfy;
    missing.erase("layers.5.attention.qkv.weight");
    const LayoutMapping mapping = detect("zimage", components::kTransformer,
                                         safetensors_listing(missing));
    CHECK_FALSE(mapping.recipe("layers.5.attention.to_q.weight"));
    CHECK(mapping.recipe("layers.4.attention.to_q.weight"));
  }
  SECTION("a file of no layout matches none, and the layouts are named") {
    CHECK_FALSE(mold::detect_layout(layouts_of("zimage"),
                                    components::kTransformer,
                                    safetensors_listing({{"foo", {1}}}), "x"));
    const std::string named =
        mold::describe_layouts(layouts_of("zimage"), components::kTransformer);
    CHECK(named.find("comfyui ('layers.0.attention.qkv.weight')") !=
          std::string::npos);
  }
  (void)diffusers;
}

TEST_CASE("llama.cpp names map to transformers' and nothing else", "[layout]") {
  CHECK(mold::llama_cpp_to_transformers("blk.12.attn_q.bias", "model.") ==
        std::string("model.layers.12.self_attn.q_proj.bias"));
  CHECK(mold::llama_cpp_to_transformers("output.weight", "") ==
        std::string("lm_head.weight"));
  for (const std::string bad :
       {"blk.01.attn_q.weight", "blk..attn_q.weight", "blk.1.attn_qq.weight",
        "blk.1234567.attn_q.weight", "blk.1", "token_embd.bias"})
    CHECK_FALSE(mold::llama_cpp_to_transformers(bad, ""));
}
