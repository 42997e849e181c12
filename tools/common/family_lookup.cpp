#include "common/family_lookup.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

namespace mold::tools {

std::string registered_family_names(const mold::Registry& registry) {
  std::string names;
  for (const auto* family : registry.families())
    names += (names.empty() ? "" : ", ") + family->name;
  return names.empty() ? "(none)" : names;
}

const mold::ModelFamily& require_family(const mold::Registry& registry,
                                        const std::string& name) {
  if (const mold::ModelFamily* family = registry.family(name)) return *family;
  throw mold::NotFound(
      fmt::format("no family '{}' is registered; registered: {}", name,
                  registered_family_names(registry)));
}

}  // namespace mold::tools
