#include "mold/plugin/data_files.hpp"

#include <utility>

#include "mold/base/error.hpp"

namespace mold {

CalibrationFile load_calibration(const Registrar& registrar) {
  return CalibrationFile::load(registrar.data_file("calibration.toml"),
                               registrar.user_data_file("calibration.toml"));
}

void register_calibration_estimators(Registrar& registrar,
                                     const CalibrationFile& file,
                                     const std::string& family) {
  for (auto& [key, estimator] : file.estimators(family))
    registrar.add_estimator(key, std::move(estimator));
}

void register_family_from_data_files(Registrar& registrar,
                                     const std::string& family_name,
                                     FamilyHints hints,
                                     FamilyFactories factories) {
  const auto models_file = registrar.data_file("models.toml");
  ModelFamily family = load_model_family(models_file);
  if (family.name != family_name)
    throw InvalidArgument(models_file.string() + ": describes family '" +
                          family.name + "', but plugin '" +
                          registrar.plugin_name() + "' serves '" + family_name +
                          "': reinstall the plugin's data files");
  if (hints) {
    family.hints = [catalog = family, hints = std::move(hints)](
                       const OomReport& report, const Workload& workload) {
      return hints(catalog, report, workload);
    };
  }
  if (factories.companion) {
    const auto& companion = factories.companion;
    family.make_vae = {companion, &FamilyFactories::vae};
    family.make_text_encoder = {companion, &FamilyFactories::text_encoder};
    family.make_transformer = {companion, &FamilyFactories::transformer};
    family.make_pipeline = {companion, &FamilyFactories::pipeline};
  } else {
    family.make_vae = std::move(factories.vae);
    family.make_text_encoder = std::move(factories.text_encoder);
    family.make_transformer = std::move(factories.transformer);
    family.make_pipeline = std::move(factories.pipeline);
  }
  family.tokenizer = std::move(factories.tokenizer);
  family.layouts = std::move(factories.layouts);
  registrar.add_family(std::move(family));
  register_calibration_estimators(registrar, load_calibration(registrar),
                                  family_name);
}

}  // namespace mold
