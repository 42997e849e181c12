#pragma once
/// A ComfyUI `models/` folder searched for a model's components by content:
/// the transformer in `diffusion_models/` and `unet/`, the VAE in `vae/`, the
/// text encoder in `text_encoders/` and `clip/` (and beside a llama.cpp text
/// GGUF, its mmproj). A file is a candidate for a component when its tensors
/// match one of the family's layouts for it (mold/catalog/weight_layout.hpp),
/// whatever its name; several candidates are told apart by how many of the
/// model name's words their file names hold, and a tie is an error naming them.
/// Torch-free.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mold/catalog/weight_layout.hpp"

namespace mold {

/// Whether `dir` looks like a ComfyUI models folder (it has one of the
/// folders above).
bool is_comfy_model_folder(const std::filesystem::path& dir);

/// The files of `components` ("transformer", "vae", "text_encoder"; "mmproj"
/// is added when the text encoder found is a llama.cpp GGUF whose family
/// reads one) for `model` ("qwen-image-edit-2511") in the ComfyUI folder
/// `dir`, by content. Components with no candidate are absent. Files that
/// cannot be read, or that match no layout, are skipped; several equally
/// good candidates are an InvalidArgument naming them and the flag to give.
std::map<std::string, std::filesystem::path> find_component_files(
    const std::filesystem::path& dir, const std::vector<WeightLayout>& layouts,
    const std::vector<std::string>& components, const std::string& model);

}  // namespace mold
