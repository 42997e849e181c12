// The zimage family plugin: Z-Image-Turbo, its component sizes
// (zimage.models.toml) and working-memory estimators (zimage.calibration.toml:
// the VAE's per pixel, the text encoder's and denoiser's per token).
// Torch-free: its models and pipeline are its companion's
// (zimage_companion.cpp), loaded the first time the family builds one.

#include <memory>
#include <mold/catalog/model_catalog.hpp>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/companion.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <utility>
#include <vector>

#include "zimage_companion.hpp"
#include "zimage_estimators.hpp"

namespace {

constexpr const char* kFamily = "zimage";

std::vector<std::string> zimage_hints(const mold::ModelFamily& /*family*/,
                                      const mold::OomReport& /*report*/,
                                      const mold::Workload& workload) {
  std::vector<std::string> hints;
  if (workload.op == mold::ops::kDenoise)
    hints.push_back(
        "Z-Image-Turbo needs only 8 steps: more steps cost time, not memory; "
        "lower the resolution or the batch instead");
  if (workload.op == mold::ops::kVaeDecode ||
      workload.op == mold::ops::kVaeEncode)
    hints.push_back(
        "tile the VAE or lower the resolution: the FLUX VAE needs about 2200 "
        "bytes per pixel per element byte to decode");
  return hints;
}

void register_all(mold::Registrar& registrar) {
  auto context = std::make_shared<zimage::CompanionContext>();
  context->tokenizer =
      mold::TokenizerFiles{registrar.data_file("tokenizer.json"),
                           registrar.data_file("tokenizer_config.json")};
  context->estimators = std::make_shared<const zimage::ZImageEstimators>(
      mold::CalibrationFile::load_for(registrar),
      registrar.data_file("calibration.toml"));
  const auto estimators = context->estimators;
  mold::FamilyFactories factories;
  factories.tokenizer = context->tokenizer;
  factories.companion =
      std::make_shared<mold::Companion>(registrar, "torch", std::move(context));
  mold::register_family_from_data_files(registrar, kFamily, zimage_hints,
                                        std::move(factories));
  zimage::register_transformer_estimators(registrar, *estimators);
}

}  // namespace

MOLD_PLUGIN("zimage", "0.1.0", register_all)
