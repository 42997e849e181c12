#pragma once
// Qwen-Image's pipelines: text-to-image (diffusers' QwenImagePipeline) and
// the edit of Qwen-Image-Edit-2511 (QwenImageEditPlusPipeline). The prompt
// in its template -> Qwen2.5-VL hidden states (the last layer's, the
// template's system turn dropped), an edit's source images through the
// vision tower first and through the VAE's encoder (their latents join the
// noisy latent's tokens) -> flow-matching Euler steps of the MMDiT with
// true classifier-free guidance (a separate negative pass, the result
// rescaled to the positive's norm) -> the VAE's decode through the recovery
// ladder -> RGB.

#include <functional>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/runtime/pipeline.hpp>

#include "qwen_image_estimators.hpp"

namespace qwen_image {

struct PipelineFactories {
  /// The tokenizer files shipped with the plugin (for seeded weights).
  std::filesystem::path tokenizer_json;
  std::filesystem::path tokenizer_config;
  /// The estimators, for architectures the registered ones do not know (a
  /// model directory's config.json).
  std::shared_ptr<const QwenImageEstimators> estimators;
};

/// Whether `model` edits images (Qwen-Image-Edit-*).
bool is_edit_model(const std::string& model);

std::unique_ptr<mold::Pipeline> make_qwen_image_pipeline(
    const PipelineFactories& factories, const mold::PipelineOptions& options);

}  // namespace qwen_image
