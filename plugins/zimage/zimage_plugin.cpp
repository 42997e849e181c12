// The zimage family plugin: Z-Image-Turbo, its component sizes
// (zimage.models.toml) and working-memory estimators (zimage.calibration.toml:
// the VAE's per pixel, the text encoder's and denoiser's per token).
// Torch-free: its models and pipeline are its companion's
// (zimage_companion.cpp), loaded the first time the family builds one.

#include <memory>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/diffusion_family.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <utility>
#include <vector>

#include "zimage_companion.hpp"
#include "zimage_estimators.hpp"
#include "zimage_layouts.hpp"

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
  mold::register_diffusion_family<zimage::CompanionContext,
                                  zimage::ZImageEstimators>(
      registrar, kFamily, zimage_hints, zimage::register_transformer_estimators,
      zimage::zimage_layouts());
}

}  // namespace

MOLD_PLUGIN("zimage", "0.1.0", register_all)
