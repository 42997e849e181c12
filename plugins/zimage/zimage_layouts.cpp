#include "zimage_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/catalog/components.hpp>
#include <mold/catalog/llama_cpp_names.hpp>
#include <string>
#include <utility>

namespace zimage {

namespace {

using mold::indexed_name;
using mold::LayoutMapping;
using mold::MappingBuilder;
using mold::TensorListing;
using mold::WeightLayout;
namespace components = mold::components;

constexpr const char* kComfyPrefix = "model.diffusion_model.";

// A Lumina2 block's tensors (after "layers.N.") as diffusers names them;
// the fused attention.qkv is split, not renamed.
constexpr std::pair<const char*, const char*> kLumina2Block[] = {
    {"attention.out.weight", "attention.to_out.0.weight"},
    {"attention.q_norm.weight", "attention.norm_q.weight"},
    {"attention.k_norm.weight", "attention.norm_k.weight"},
    {"feed_forward.w1.weight", "feed_forward.w1.weight"},
    {"feed_forward.w2.weight", "feed_forward.w2.weight"},
    {"feed_forward.w3.weight", "feed_forward.w3.weight"},
    {"attention_norm1.weight", "attention_norm1.weight"},
    {"attention_norm2.weight", "attention_norm2.weight"},
    {"ffn_norm1.weight", "ffn_norm1.weight"},
    {"ffn_norm2.weight", "ffn_norm2.weight"},
    {"adaLN_modulation.0.weight", "adaLN_modulation.0.weight"},
    {"adaLN_modulation.0.bias", "adaLN_modulation.0.bias"},
};

// Lumina2 (ComfyUI, the lumina2 GGUFs) -> diffusers' ZImageTransformer2DModel.
LayoutMapping map_lumina2(const TensorListing& listing,
                          const std::string& prefix) {
  MappingBuilder b(listing, prefix, "comfyui", {});
  for (const std::string& name : b.names()) {
    if (name == "norm_final.weight") {  // built, never used in the forward
      b.drop(name);
      continue;
    }
    if (name == "x_pad_token" || name == "cap_pad_token") {
      // [1, dim]; stable-diffusion.cpp's converter writes them as [dim].
      b.vector_as_row(name, name);
      continue;
    }
    if (name.rfind("t_embedder.mlp.", 0) == 0 ||
        name.rfind("cap_embedder.", 0) == 0) {
      b.copy(name, name);
      continue;
    }
    if (name.rfind("x_embedder.", 0) == 0) {
      b.copy(name, "all_x_embedder.2-1." + name.substr(11));
      continue;
    }
    if (name.rfind("final_layer.", 0) == 0) {
      b.copy(name, "all_final_layer.2-1." + name.substr(12));
      continue;
    }
    for (const char* head : {"layers.", "noise_refiner.", "context_refiner."}) {
      const auto block = indexed_name(name, head);
      if (!block) continue;
      const std::string base = fmt::format("{}{}.", head, block->index);
      if (block->rest == "attention.qkv.weight") {
        b.split_rows(name, {base + "attention.to_q.weight",
                            base + "attention.to_k.weight",
                            base + "attention.to_v.weight"});
        break;
      }
      for (const auto& [from, to] : kLumina2Block)
        if (block->rest == from) {
          b.copy(name, base + to);
          break;
        }
      break;
    }
  }
  return b.finish(true);  // what no rule took is refused by name
}

// The resnet of the LDM VAE's names, after "block.N." (nin_shortcut is
// diffusers' conv_shortcut).
std::string ldm_resnet(const std::string& rest) {
  const std::string head = "nin_shortcut.";
  return rest.rfind(head, 0) == 0 ? "conv_shortcut." + rest.substr(head.size())
                                  : rest;
}

bool ldm_resnet_tensor(const std::string& rest) {
  for (const char* part :
       {"norm1.", "conv1.", "norm2.", "conv2.", "nin_shortcut."})
    for (const char* p : {"weight", "bias"})
      if (rest == std::string(part) + p) return true;
  return false;
}

// The original LDM VAE names (ae.safetensors) -> diffusers' AutoencoderKL.
LayoutMapping map_ldm_vae(const TensorListing& listing,
                          const std::string& prefix) {
  MappingBuilder b(listing, prefix, "ldm", {});
  // diffusers numbers the decoder's blocks from the lowest resolution.
  int up_blocks = 0;
  for (const std::string& name : b.names())
    if (const auto up = indexed_name(name, "decoder.up."))
      up_blocks = std::max(up_blocks, up->index + 1);
  for (const std::string& name : b.names()) {
    const bool encoder = name.rfind("encoder.", 0) == 0;
    const bool decoder = name.rfind("decoder.", 0) == 0;
    if (!encoder && !decoder) {
      if (name.rfind("quant_conv.", 0) == 0 ||
          name.rfind("post_quant_conv.", 0) == 0)
        b.copy(name, name);
      continue;
    }
    const std::string side = encoder ? "encoder." : "decoder.";
    const std::string rest = name.substr(side.size());
    if (rest.rfind("conv_in.", 0) == 0 || rest.rfind("conv_out.", 0) == 0) {
      b.copy(name, name);
    } else if (rest.rfind("norm_out.", 0) == 0) {
      b.copy(name, side + "conv_norm_out." + rest.substr(9));
    } else if (const auto down = indexed_name(rest, "down."); encoder && down) {
      if (const auto block = indexed_name(down->rest, "block.");
          block && ldm_resnet_tensor(block->rest))
        b.copy(name,
               fmt::format("{}down_blocks.{}.resnets.{}.{}", side, down->index,
                           block->index, ldm_resnet(block->rest)));
      else if (down->rest.rfind("downsample.conv.", 0) == 0)
        b.copy(name, fmt::format("{}down_blocks.{}.downsamplers.0.conv.{}",
                                 side, down->index, down->rest.substr(16)));
    } else if (const auto up = indexed_name(rest, "up."); decoder && up) {
      const int index = up_blocks - 1 - up->index;
      if (const auto block = indexed_name(up->rest, "block.");
          block && ldm_resnet_tensor(block->rest))
        b.copy(name, fmt::format("{}up_blocks.{}.resnets.{}.{}", side, index,
                                 block->index, ldm_resnet(block->rest)));
      else if (up->rest.rfind("upsample.conv.", 0) == 0)
        b.copy(name, fmt::format("{}up_blocks.{}.upsamplers.0.conv.{}", side,
                                 index, up->rest.substr(14)));
    } else if (rest.rfind("mid.block_", 0) == 0 && rest.size() > 12 &&
               (rest[10] == '1' || rest[10] == '2') && rest[11] == '.' &&
               ldm_resnet_tensor(rest.substr(12))) {
      b.copy(name,
             fmt::format("{}mid_block.resnets.{}.{}", side,
                         rest[10] == '1' ? 0 : 1, ldm_resnet(rest.substr(12))));
    } else if (rest.rfind("mid.attn_1.", 0) == 0) {
      const std::string part = rest.substr(11);
      const std::string attention = side + "mid_block.attentions.0.";
      for (const auto& [from, to] :
           {std::pair<const char*, const char*>{"norm.", "group_norm."},
            {"q.", "to_q."},
            {"k.", "to_k."},
            {"v.", "to_v."},
            {"proj_out.", "to_out.0."}}) {
        const std::string f = from;
        if (part != f + "weight" && part != f + "bias") continue;
        const std::string target = attention + to + part.substr(f.size());
        if (f != "norm." && part == f + "weight")
          b.squeeze(name, target);  // a 1x1 conv as diffusers' linear
        else
          b.copy(name, target);
      }
    }
  }
  return b.finish(true);
}

LayoutMapping map_llama_cpp_qwen3(const TensorListing& listing,
                                  const std::string& prefix) {
  MappingBuilder b(listing, prefix, "llama.cpp", {});
  for (const std::string& name : b.names())
    if (const auto target = mold::llama_cpp_to_transformers(name, ""))
      b.copy(name, *target);
  return b.finish(true);
}

}  // namespace

std::vector<WeightLayout> zimage_layouts() {
  // Each: component, name, description, markers, absent, prefixes,
  // gguf_architectures, safetensors, map.
  return {
      {components::kTransformer,
       "diffusers",
       "diffusers' ZImageTransformer2DModel names (a model directory's "
       "transformer/, or a GGUF of them)",
       {"layers.0.attention.to_q.weight"},
       {},
       {kComfyPrefix, "diffusion_model."},
       {},
       true,
       mold::map_own_names},
      // x_pad_token tells Z-Image from Lumina-Image-2.0, which shares the
      // names; stable-diffusion.cpp writes GGUFs with no architecture.
      {components::kTransformer,
       "comfyui",
       "ComfyUI's single file and the lumina2 GGUFs (Lumina2/NextDiT names: "
       "x_embedder, final_layer, a fused attention.qkv split into q, k, v)",
       {"layers.0.attention.qkv.weight", "x_pad_token"},
       {},
       {kComfyPrefix, "diffusion_model."},
       {"lumina2", ""},
       true,
       map_lumina2},
      {components::kVae,
       "diffusers",
       "diffusers' AutoencoderKL names (a model directory's vae/)",
       {"decoder.up_blocks.0.resnets.0.conv1.weight"},
       {},
       {"vae."},
       {},
       true,
       mold::map_own_names},
      {components::kVae,
       "ldm",
       "the original FLUX autoencoder names (ae.safetensors: down.i.block.j, "
       "up.i numbered from the highest resolution, mid.attn_1 as 1x1 convs)",
       {"decoder.up.0.block.0.conv1.weight"},
       {},
       {"first_stage_model.", "vae."},
       {},
       true,
       map_ldm_vae},
      // Qwen3's q/k norms tell it from Qwen2.5's names.
      {components::kTextEncoder,
       "transformers",
       "transformers' Qwen3 names (a model directory's text_encoder/, or one "
       ".safetensors file)",
       {"layers.0.self_attn.q_proj.weight", "layers.0.self_attn.q_norm.weight"},
       {},
       {"model."},
       {},
       true,
       mold::map_own_names},
      {components::kTextEncoder,
       "llama.cpp",
       "a llama.cpp GGUF of Qwen3 (token_embd, blk.N.attn_q, ffn_gate, ...)",
       {"blk.0.attn_q.weight"},
       {},
       {},
       {"qwen3"},
       false,
       map_llama_cpp_qwen3},
  };
}

}  // namespace zimage
