#pragma once
/// A plugin's registration from the data files it ships beside itself:
/// `<plugin>.models.toml` (its family) and `<plugin>.calibration.toml` (its
/// estimators' constants, with the user's override). Torch-free.

#include <string>

#include "mold/catalog/model_catalog.hpp"
#include "mold/catalog/model_family.hpp"
#include "mold/estimate/calibration.hpp"
#include "mold/plugin/registrar.hpp"

namespace mold {

/// CalibrationFile::load(registrar.data_file("calibration.toml"),
///                       registrar.user_data_file("calibration.toml")).
CalibrationFile load_calibration(const Registrar& registrar);

/// Registers `file.estimators(family)`: one per [op.backend] per-pixel table.
void register_calibration_estimators(Registrar& registrar,
                                     const CalibrationFile& file,
                                     const std::string& family);

/// The register_all of a data-driven family plugin: reads
/// `<plugin>.models.toml` (which must describe `family_name`), attaches
/// `hints`, registers the family, then one estimator per table of
/// `<plugin>.calibration.toml` (with the user's overrides). Throws ConfigError
/// / InvalidArgument naming the file.
void register_family_from_data_files(Registrar& registrar,
                                     const std::string& family_name,
                                     FamilyHints hints,
                                     FamilyFactories factories = {});

}  // namespace mold
