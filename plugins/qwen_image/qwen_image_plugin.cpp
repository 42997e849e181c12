// The qwen_image family plugin: Qwen-Image and Qwen-Image-Edit-2511, their
// component sizes (qwen_image.models.toml), working-memory estimators
// (qwen_image.calibration.toml: the VAE's per pixel, the encoders' and the
// denoiser's per token), architectures and pipelines.

#include <memory>
#include <mold/catalog/model_catalog.hpp>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <utility>
#include <vector>

#include "qwen25vl_text_encoder.hpp"
#include "qwen_image_estimators.hpp"
#include "qwen_image_pipeline.hpp"
#include "qwen_image_transformer.hpp"
#include "qwen_image_vae.hpp"

namespace {

constexpr const char* kFamily = "qwen_image";

std::vector<std::string> qwen_image_hints(const mold::ModelFamily& /*family*/,
                                          const mold::OomReport& /*report*/,
                                          const mold::Workload& workload) {
  std::vector<std::string> hints;
  if (workload.model.rfind("qwen-image-edit", 0) == 0)
    hints.push_back(
        "for edits, resize the source image: its resolution is used by "
        "default");
  return hints;
}

void register_all(mold::Registrar& registrar) {
  mold::FamilyFactories factories;
  factories.vae = qwen_image::make_qwen_image_vae;
  factories.transformer = qwen_image::make_qwen_image_transformer;
  factories.text_encoder = [](const mold::ArchSpec& arch) {
    return std::unique_ptr<mold::TextEncoder>(
        qwen_image::make_qwen25vl_text_encoder(arch, /*with_vision=*/true));
  };
  const auto estimators =
      std::make_shared<const qwen_image::QwenImageEstimators>(
          mold::CalibrationFile::load_for(registrar),
          registrar.data_file("calibration.toml"));
  factories.tokenizer =
      mold::TokenizerFiles{registrar.data_file("tokenizer.json"),
                           registrar.data_file("tokenizer_config.json")};
  const qwen_image::PipelineFactories parts{
      factories.tokenizer->tokenizer_json,
      factories.tokenizer->tokenizer_config, estimators};
  factories.pipeline = [parts](const mold::PipelineOptions& options) {
    return qwen_image::make_qwen_image_pipeline(parts, options);
  };
  mold::register_family_from_data_files(registrar, kFamily, qwen_image_hints,
                                        std::move(factories));
  qwen_image::register_sequence_estimators(registrar, *estimators);
}

}  // namespace

MOLD_PLUGIN("qwen_image", "0.1.0", register_all)
