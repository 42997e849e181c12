// The zimage plugin's companion (mold/plugin/companion.hpp): its models (the
// FLUX VAE, the Qwen3 text encoder, the S3-DiT) and its pipeline, loaded the
// first time the family builds one.

#include "zimage_companion.hpp"

#include <mold/model/vae.hpp>
#include <mold/plugin/companion.hpp>

#include "flux_vae.hpp"
#include "qwen3_text_encoder.hpp"
#include "zimage_pipeline.hpp"
#include "zimage_transformer.hpp"

namespace {

void make_factories(const void* context, mold::FamilyFactories& factories) {
  const auto& plugin = *static_cast<const zimage::CompanionContext*>(context);
  factories.vae = zimage::make_flux_vae;
  factories.text_encoder = zimage::make_qwen3_text_encoder;
  factories.transformer = zimage::make_zimage_transformer;
  zimage::PipelineFactories parts{zimage::declare_flux_vae,
                                  factories.text_encoder,
                                  factories.transformer,
                                  plugin.tokenizer.tokenizer_json,
                                  plugin.tokenizer.tokenizer_config,
                                  plugin.estimators};
  factories.pipeline = [parts](const mold::PipelineOptions& options) {
    return zimage::make_zimage_pipeline(parts, options);
  };
}

}  // namespace

MOLD_COMPANION("zimage", make_factories)
