#pragma once
// The checkpoint layouts Z-Image's components are read from, detected from
// the file's tensors (mold/catalog/weight_layout.hpp): the transformer in
// diffusers' names or ComfyUI's single file and the lumina2 GGUFs (Lumina2 /
// NextDiT names, a fused qkv); the FLUX VAE in diffusers' names or the
// original LDM names (ae.safetensors); Qwen3 in transformers' names or as a
// llama.cpp GGUF. The rules were read from diffusers' single_file_utils
// (convert_z_image_transformer_checkpoint_to_diffusers,
// convert_ldm_vae_checkpoint) and ComfyUI-GGUF's LLAMA_SD_MAP. Torch-free.

#include <mold/catalog/weight_layout.hpp>
#include <vector>

namespace zimage {

std::vector<mold::WeightLayout> zimage_layouts();

}  // namespace zimage
