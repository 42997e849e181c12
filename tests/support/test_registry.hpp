#pragma once
// A registry with the real plugins of this build loaded, shared by tests.

#include <mold/catalog/model_family.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <stdexcept>
#include <string>

#include "support/paths.hpp"

namespace mold::test {

/// The real plugins (qwen_image, zimage, backend_cuda, backend_metal), loaded
/// once.
inline const Registry& real_plugins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    PluginLoader(*r).load_directory(kPluginDir);
    return r;
  }();
  return *registry;
}

/// A family of the real plugins ("zimage", "qwen_image"); throws when the
/// build has no such plugin.
inline const ModelFamily& real_family(const std::string& name) {
  const ModelFamily* family = real_plugins().family(name);
  if (!family) throw std::runtime_error("no plugin registers family " + name);
  return *family;
}

}  // namespace mold::test
