#pragma once
// Z-Image's text-to-image pipeline (diffusers' ZImagePipeline): the prompt in
// Qwen3's chat template -> Qwen3 hidden states (second-to-last layer, real
// tokens only) -> flow-matching Euler steps of the S3-DiT from host-seeded
// noise -> the FLUX VAE's decode through the recovery ladder -> RGB.

#include <functional>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/runtime/pipeline.hpp>

#include "flux_vae_config.hpp"
#include "zimage_estimators.hpp"

namespace zimage {

struct PipelineFactories {
  /// Builds the VAE with its parameters declared only.
  std::function<std::unique_ptr<mold::Vae>(const FluxVaeConfig& config)> vae;
  mold::TextEncoderFactory text_encoder;
  mold::DenoiserFactory transformer;
  /// The tokenizer files shipped with the plugin (for seeded weights).
  std::filesystem::path tokenizer_json;
  std::filesystem::path tokenizer_config;
  /// The text_encode and denoise estimators, for architectures the
  /// registered ones do not know (a config.json's).
  std::shared_ptr<const ZImageEstimators> estimators;
};

std::unique_ptr<mold::Pipeline> make_zimage_pipeline(
    const PipelineFactories& factories, const mold::PipelineOptions& options);

}  // namespace zimage
