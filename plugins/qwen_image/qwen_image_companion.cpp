// The qwen_image plugin's companion (mold/plugin/companion.hpp): its models
// (the Qwen-Image VAE, the Qwen2.5-VL text encoder with its vision tower, the
// MMDiT) and its pipelines, loaded the first time the family builds one.

#include "qwen_image_companion.hpp"

#include <memory>
#include <mold/plugin/companion.hpp>

#include "qwen25vl_text_encoder.hpp"
#include "qwen_image_pipeline.hpp"
#include "qwen_image_transformer.hpp"
#include "qwen_image_vae.hpp"

namespace {

void make_factories(const void* context, mold::FamilyFactories& factories) {
  const auto& plugin =
      *static_cast<const qwen_image::CompanionContext*>(context);
  factories.vae = qwen_image::make_qwen_image_vae;
  factories.transformer = qwen_image::make_qwen_image_transformer;
  factories.text_encoder = [](const mold::ArchSpec& arch) {
    return std::unique_ptr<mold::TextEncoder>(
        qwen_image::make_qwen25vl_text_encoder(arch, /*with_vision=*/true));
  };
  const qwen_image::PipelineFactories parts{plugin.tokenizer.tokenizer_json,
                                            plugin.tokenizer.tokenizer_config,
                                            plugin.estimators};
  factories.pipeline = [parts](const mold::PipelineOptions& options) {
    return qwen_image::make_qwen_image_pipeline(parts, options);
  };
}

}  // namespace

MOLD_COMPANION("qwen_image", make_factories)
