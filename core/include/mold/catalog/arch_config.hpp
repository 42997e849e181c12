#pragma once
/// A model's configuration for an architecture name, the same rule for every
/// model of every family: "default" is the published architecture, "tiny" the
/// small one tests and seeded runs use, "config" the config.json the ArchSpec
/// names (a model directory's). Torch-free.

#include <string>

#include "mold/base/error.hpp"
#include "mold/catalog/model_family.hpp"
#include "mold/config/json_config.hpp"

namespace mold {

/// Config::default_config(), Config::tiny_config() or
/// Config::from_json(JsonConfig::read(arch.config)) by arch.name. Throws
/// InvalidArgument naming `what` ("the zimage transformer") and the names it
/// takes for any other name; what from_json throws for a bad config.json.
template <class Config>
Config config_for_arch(const ArchSpec& arch, const std::string& what) {
  if (arch.name == archs::kDefault) return Config::default_config();
  if (arch.name == archs::kTiny) return Config::tiny_config();
  if (arch.name == archs::kConfig)
    return Config::from_json(JsonConfig::read(arch.config));
  throw InvalidArgument(what +
                        " has architectures 'default', 'tiny' and 'config' "
                        "(a config.json), not '" +
                        arch.name + "'");
}

}  // namespace mold
