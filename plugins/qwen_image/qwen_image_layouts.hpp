#pragma once
// The checkpoint layouts Qwen-Image's components are read from, detected from
// the file's tensors (mold/catalog/weight_layout.hpp): the transformer in
// diffusers' names (a model directory, ComfyUI's single file with or without
// the model.diffusion_model. prefix, the qwen_image GGUFs; Edit-2511 files
// carry a __index_timestep_zero__ marker, zero_cond_t); the VAE in diffusers'
// names or Wan 2.1's (ComfyUI's qwen_image_vae.safetensors); Qwen2.5-VL in
// transformers' names or as llama.cpp GGUFs, the language model's and the
// vision tower's (mmproj) given together. The rules were read from diffusers'
// single_file_utils (convert_wan_vae_to_diffusers), ComfyUI-GGUF's loader
// (LLAMA_SD_MAP, the mmproj loader) and llama.cpp's convert_hf_to_gguf.
// Torch-free.

#include <mold/catalog/weight_layout.hpp>
#include <vector>

namespace qwen_image {

std::vector<mold::WeightLayout> qwen_image_layouts();

}  // namespace qwen_image
