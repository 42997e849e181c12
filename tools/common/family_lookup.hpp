#pragma once
/// Finding a model family by name for a command, with the message every tool
/// gives when it is not there.

#include <mold/catalog/model_family.hpp>
#include <mold/plugin/registry.hpp>
#include <string>

namespace mold::tools {

/// The registered family `name`. Throws mold::NotFound naming it and listing
/// the registered families (or saying there are none: no plugin loaded).
const mold::ModelFamily& require_family(const mold::Registry& registry,
                                        const std::string& name);

/// "qwen_image, zimage", or "(none)".
std::string registered_family_names(const mold::Registry& registry);

}  // namespace mold::tools
