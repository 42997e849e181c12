#pragma once
/// Model families described in a TOML data file shipped beside a plugin:
///
///     [family]
///     name = "qwen_image"
///     description = "Qwen-Image text-to-image and editing"
///
///     [[models]]
///     name = "qwen-image"
///     default_variant = "bf16"
///       [[models.variants]]
///       name = "bf16"
///       source = "where the sizes come from"
///       components = { transformer = 40872114720,
///                      text_encoder = "15.44 GiB", vae = 253785062 }
///
/// Component sizes are integers (bytes) or byte strings ("20.3 GiB").

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mold/catalog/model_family.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

/// Reads a family (without hints: the plugin adds those). Throws ConfigError
/// naming the file, line and key.
ModelFamily load_model_family(const std::filesystem::path& file);

/// Hints of a family plugin, given its catalogue.
using FamilyHints = std::function<std::vector<std::string>(
    const ModelFamily&, const OomReport&, const Workload&)>;

}  // namespace mold
