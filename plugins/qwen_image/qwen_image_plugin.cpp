// The qwen_image family plugin: Qwen-Image and Qwen-Image-Edit-2511, their
// component sizes (qwen_image.models.toml), working-memory estimators
// (qwen_image.calibration.toml: the VAE's per pixel, the encoders' and the
// denoiser's per token). Torch-free: its architectures and pipelines are its
// companion's (qwen_image_companion.cpp), loaded the first time the family
// builds one.

#include <memory>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/diffusion_family.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <utility>
#include <vector>

#include "qwen_image_companion.hpp"
#include "qwen_image_estimators.hpp"
#include "qwen_image_layouts.hpp"

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
  mold::register_diffusion_family<qwen_image::CompanionContext,
                                  qwen_image::QwenImageEstimators>(
      registrar, kFamily, qwen_image_hints,
      qwen_image::register_sequence_estimators,
      qwen_image::qwen_image_layouts());
}

}  // namespace

MOLD_PLUGIN("qwen_image", "0.1.0", register_all)
