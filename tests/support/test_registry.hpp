#pragma once
// A registry with the real plugins of this build loaded, shared by tests.

#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>

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

}  // namespace mold::test
