#include "qwen_image_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/catalog/components.hpp>
#include <mold/catalog/llama_cpp_names.hpp>
#include <optional>
#include <string>
#include <utility>

namespace qwen_image {

namespace {

using mold::indexed_name;
using mold::LayoutMapping;
using mold::MappingBuilder;
using mold::TensorListing;
using mold::WeightLayout;
namespace components = mold::components;

constexpr const char* kComfyPrefix = "model.diffusion_model.";
constexpr const char* kTimestepZeroMarker = "__index_timestep_zero__";

bool starts(const std::string& text, const char* head) {
  return text.rfind(head, 0) == 0;
}

// diffusers' names; Edit-2511's marker tensor says zero_cond_t and is not a
// parameter.
LayoutMapping map_transformer(const TensorListing& listing,
                              const std::string& prefix) {
  MappingBuilder b(listing, prefix, "diffusers", {});
  for (const std::string& name : b.names()) {
    if (name == kTimestepZeroMarker) {
      b.drop(name);
      b.imply("zero_cond_t", "true");
    } else {
      b.copy(name, name);
    }
  }
  return b.finish(false);
}

// A Wan 2.1 resnet's tensor (after "N.") as diffusers names it; none for
// another tensor.
std::optional<std::string> wan_resnet(const std::string& rest) {
  constexpr std::pair<const char*, const char*> kParts[] = {
      {"residual.0.gamma", "norm1.gamma"},
      {"residual.2.weight", "conv1.weight"},
      {"residual.2.bias", "conv1.bias"},
      {"residual.3.gamma", "norm2.gamma"},
      {"residual.6.weight", "conv2.weight"},
      {"residual.6.bias", "conv2.bias"},
      {"shortcut.weight", "conv_shortcut.weight"},
      {"shortcut.bias", "conv_shortcut.bias"},
  };
  for (const auto& [from, to] : kParts)
    if (rest == from) return std::string(to);
  return std::nullopt;
}

bool wan_resample(const std::string& rest) {
  return rest == "resample.1.weight" || rest == "resample.1.bias" ||
         rest == "time_conv.weight" || rest == "time_conv.bias";
}

bool wan_attention(const std::string& rest) {
  return rest == "norm.gamma" || rest == "to_qkv.weight" ||
         rest == "to_qkv.bias" || rest == "proj.weight" || rest == "proj.bias";
}

// Wan 2.1's VAE names (ComfyUI's qwen_image_vae.safetensors) -> diffusers'
// AutoencoderKLQwenImage.
LayoutMapping map_wan_vae(const TensorListing& listing,
                          const std::string& prefix) {
  MappingBuilder b(listing, prefix, "wan", {});
  // The decoder's upsamples are flat: per up block its resnets, then its
  // upsampler (none after the last); the first resample says how many.
  int resnets_per_block = 0;
  bool resample_seen = false;
  for (const std::string& name : b.names())
    if (const auto up = indexed_name(name, "decoder.upsamples.")) {
      if (wan_resample(up->rest)) {
        if (!resample_seen || up->index < resnets_per_block)
          resnets_per_block = up->index;
        resample_seen = true;
      } else if (!resample_seen) {
        resnets_per_block = std::max(resnets_per_block, up->index + 1);
      }
    }
  const int group = resnets_per_block + 1;
  for (const std::string& name : b.names()) {
    if (starts(name, "conv1.")) {
      b.copy(name, "quant_conv." + name.substr(6));
      continue;
    }
    if (starts(name, "conv2.")) {
      b.copy(name, "post_quant_conv." + name.substr(6));
      continue;
    }
    const bool encoder = starts(name, "encoder.");
    if (!encoder && !starts(name, "decoder.")) continue;
    const std::string side = encoder ? "encoder." : "decoder.";
    const std::string rest = name.substr(side.size());
    if (starts(rest, "conv1.")) {
      b.copy(name, side + "conv_in." + rest.substr(6));
    } else if (rest == "head.0.gamma") {
      b.copy(name, side + "norm_out.gamma");
    } else if (starts(rest, "head.2.")) {
      b.copy(name, side + "conv_out." + rest.substr(7));
    } else if (const auto mid = indexed_name(rest, "middle.")) {
      if (mid->index == 1 && wan_attention(mid->rest))
        b.copy(name, side + "mid_block.attentions.0." + mid->rest);
      else if (mid->index != 1)
        if (const auto part = wan_resnet(mid->rest))
          b.copy(name, fmt::format("{}mid_block.resnets.{}.{}", side,
                                   mid->index / 2, *part));
    } else if (const auto down = indexed_name(rest, "downsamples.");
               encoder && down) {
      const std::string block =
          fmt::format("{}down_blocks.{}.", side, down->index);
      if (wan_resample(down->rest))
        b.copy(name, block + down->rest);
      else if (const auto part = wan_resnet(down->rest))
        b.copy(name, block + *part);
    } else if (const auto up = indexed_name(rest, "upsamples.");
               !encoder && up) {
      const int g = up->index / group, r = up->index % group;
      if (r == resnets_per_block && wan_resample(up->rest))
        b.copy(name, fmt::format("{}up_blocks.{}.upsamplers.0.{}", side, g,
                                 up->rest));
      else if (r < resnets_per_block)
        if (const auto part = wan_resnet(up->rest))
          b.copy(name, fmt::format("{}up_blocks.{}.resnets.{}.{}", side, g, r,
                                   *part));
    }
  }
  return b.finish(true);
}

// llama.cpp's mmproj names of Qwen2.5-VL's vision tower (after "v.blk.N.")
// as transformers names them (after "visual.blocks.N.").
constexpr std::pair<const char*, const char*> kVisionBlock[] = {
    {"attn_qkv.weight", "attn.qkv.weight"},
    {"attn_qkv.bias", "attn.qkv.bias"},
    {"attn_out.weight", "attn.proj.weight"},
    {"attn_out.bias", "attn.proj.bias"},
    {"ln1.weight", "norm1.weight"},
    {"ln2.weight", "norm2.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_gate.bias", "mlp.gate_proj.bias"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_up.bias", "mlp.up_proj.bias"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_down.bias", "mlp.down_proj.bias"},
};

void map_mmproj(MappingBuilder& b) {
  for (const std::string& name : b.names()) {
    if (name == "v.patch_embd.weight") {
      // The Conv3d's two temporal slices, stored apart.
      b.stack({name, name + ".1"}, "visual.patch_embed.proj.weight", 2);
    } else if (name == "v.post_ln.weight") {
      b.copy(name, "visual.merger.ln_q.weight");
    } else if (starts(name, "mm.0.") || starts(name, "mm.2.")) {
      b.copy(name, "visual.merger.mlp." + name.substr(3));
    } else if (const auto block = indexed_name(name, "v.blk.")) {
      const std::string head = fmt::format("v.blk.{}.", block->index);
      const std::string target = fmt::format("visual.blocks.{}.", block->index);
      for (const char* p : {"weight", "bias"})
        if (block->rest == std::string("attn_q.") + p)
          b.concat({head + "attn_q." + p, head + "attn_k." + p,
                    head + "attn_v." + p},
                   target + "attn.qkv." + p);
      for (const auto& [from, to] : kVisionBlock)
        if (block->rest == from) b.copy(name, target + to);
    }
  }
}

// llama.cpp's GGUFs of Qwen2.5-VL: the language model (qwen2vl) and, given
// with it, the vision tower (mmproj, clip).
LayoutMapping map_llama_cpp_qwen25vl(const TensorListing& listing,
                                     const std::string& prefix) {
  MappingBuilder b(listing, prefix, "llama.cpp", {});
  bool vision = false;
  for (const std::string& name : b.names()) {
    if (const auto target = mold::llama_cpp_to_transformers(name, "model."))
      b.copy(name, *target);
    vision = vision || starts(name, "v.");
  }
  if (vision)
    map_mmproj(b);
  else
    b.missing_hint(
        "a llama.cpp text GGUF holds no vision tower: give the model's mmproj "
        "GGUF with --mmproj");
  return b.finish(true);
}

LayoutMapping refuse_mmproj_alone(const TensorListing& listing,
                                  const std::string& /*prefix*/) {
  throw mold::LayoutError(fmt::format(
      "{} is a llama.cpp mmproj (the vision tower only): give the language "
      "model's GGUF with --text-encoder and this file with --mmproj",
      listing.describe()));
}

}  // namespace

std::vector<WeightLayout> qwen_image_layouts() {
  // Each: component, name, description, markers, absent, prefixes,
  // gguf_architectures, safetensors, map.
  return {
      {components::kTransformer,
       "diffusers",
       "diffusers' QwenImageTransformer2DModel names (a model directory's "
       "transformer/, ComfyUI's single file, the qwen_image GGUFs)",
       {"transformer_blocks.0.attn.to_q.weight"},
       {},
       {kComfyPrefix, "diffusion_model."},
       {},
       true,
       map_transformer},
      {components::kVae,
       "diffusers",
       "diffusers' AutoencoderKLQwenImage names (a model directory's vae/)",
       {"decoder.mid_block.resnets.0.norm1.gamma"},
       {},
       {"vae."},
       {},
       true,
       mold::map_own_names},
      {components::kVae,
       "wan",
       "Wan 2.1's VAE names (ComfyUI's qwen_image_vae.safetensors: "
       "downsamples.N, upsamples.N flat, residual.0/2/3/6, head, middle)",
       {"decoder.middle.0.residual.0.gamma"},
       {},
       {"first_stage_model.", "vae."},
       {},
       true,
       map_wan_vae},
      // Qwen2.5's q/k/v biases tell it from Qwen3's names.
      {components::kTextEncoder,
       "transformers",
       "transformers' Qwen2.5-VL names (a model directory's text_encoder/, or "
       "one .safetensors file)",
       {"model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.q_proj.bias"},
       {},
       {},
       {},
       true,
       mold::map_own_names},
      {components::kTextEncoder,
       "llama.cpp",
       "llama.cpp GGUFs of Qwen2.5-VL: the language model (qwen2vl: "
       "token_embd, blk.N.attn_q, ...) and its mmproj (clip: v.blk.N, "
       "v.patch_embd, mm.N)",
       {"blk.0.attn_q.weight"},
       {},
       {},
       {"qwen2vl", "clip"},
       false,
       map_llama_cpp_qwen25vl},
      {components::kTextEncoder,
       "mmproj",
       "a llama.cpp mmproj GGUF alone (the vision tower without its language "
       "model)",
       {"v.blk.0.ln1.weight"},
       {"blk.0.attn_q.weight"},
       {},
       {"clip"},
       false,
       refuse_mmproj_alone},
  };
}

}  // namespace qwen_image
