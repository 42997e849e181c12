#pragma once
// Checkpoints in the layouts people download, written from a model's own
// (diffusers/transformers) parameters by the INVERSE of each mapping, with
// rules written here independently of the loader's: ComfyUI's Z-Image
// transformer (a fused qkv), the FLUX VAE's LDM names, the Wan VAE names,
// llama.cpp's decoder names and Qwen2.5-VL's mmproj. A test loads them back
// and expects the parameters bit for bit.

#include <ATen/ATen.h>

#include <filesystem>
#include <mold/model/module.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mold::test {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// ZImageTransformer2DModel's parameters as ComfyUI stores them (Lumina2
/// names, q/k/v fused into attention.qkv, norm_final.weight added), each
/// name after `prefix`.
NamedTensors zimage_comfy_transformer(const Module& module,
                                      const std::string& prefix = "");
/// AutoencoderKL's parameters in the original LDM names (ae.safetensors).
NamedTensors flux_ldm_vae(const Module& module);
/// AutoencoderKLQwenImage's parameters in Wan 2.1's names.
NamedTensors wan_vae(const Module& module);
/// A Qwen-style decoder's parameters in llama.cpp's names; `model` is the
/// prefix of the module's decoder names ("" for Qwen3, "model." for
/// Qwen2.5-VL). Names of no rule (visual.*) are left out.
NamedTensors llama_cpp_decoder(const Module& module, const std::string& model);
/// Qwen2.5-VL's visual.* parameters as llama.cpp's mmproj stores them.
NamedTensors qwen25vl_mmproj(const Module& module);

/// Writes `tensors` as a GGUF file with general.architecture `arch` (none
/// when it is empty, as stable-diffusion.cpp's converter writes), every
/// tensor F32 (or Q8_0 blocks for matrices whose rows are whole blocks,
/// with `q8`).
void write_gguf(const std::filesystem::path& path, const std::string& arch,
                const NamedTensors& tensors, bool q8 = false);

}  // namespace mold::test
