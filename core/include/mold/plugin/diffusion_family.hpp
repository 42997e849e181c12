#pragma once
/// The registration a diffusion family plugin does, once: the tokenizer files
/// it ships, its estimators made from its calibration.toml (and the user's
/// override), its companion "torch" (mold/plugin/companion.hpp) holding both,
/// the family from its models.toml with its hints, then its estimators'
/// registration. Torch-free.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mold/catalog/model_catalog.hpp"
#include "mold/estimate/calibration.hpp"
#include "mold/plugin/companion.hpp"
#include "mold/plugin/data_files.hpp"
#include "mold/plugin/registrar.hpp"

namespace mold {

/// Context: the companion's context, with members `tokenizer`
/// (TokenizerFiles) and `estimators` (std::shared_ptr<const Estimators>).
/// Estimators: constructed from (CalibrationFile, path of calibration.toml).
/// register_estimators(Registrar&, const Estimators&): registers them.
template <class Context, class Estimators, class RegisterEstimators>
void register_diffusion_family(Registrar& registrar, const std::string& family,
                               FamilyHints hints,
                               RegisterEstimators register_estimators,
                               std::vector<WeightLayout> layouts = {}) {
  auto context = std::make_shared<Context>();
  context->tokenizer =
      TokenizerFiles{registrar.data_file("tokenizer.json"),
                     registrar.data_file("tokenizer_config.json")};
  context->estimators = std::make_shared<const Estimators>(
      load_calibration(registrar), registrar.data_file("calibration.toml"));
  const auto estimators = context->estimators;
  FamilyFactories factories;
  factories.tokenizer = context->tokenizer;
  factories.layouts = std::move(layouts);
  factories.companion =
      std::make_shared<Companion>(registrar, "torch", std::move(context));
  register_family_from_data_files(registrar, family, std::move(hints),
                                  std::move(factories));
  register_estimators(registrar, *estimators);
}

}  // namespace mold
