#pragma once
// What the zimage plugin (zimage_plugin.cpp, torch-free) hands its companion
// (zimage_companion.cpp, the library `zimage/torch.so` that builds the
// family's models and pipeline; mold/plugin/companion.hpp).

#include <memory>
#include <mold/catalog/model_family.hpp>

#include "zimage_estimators.hpp"

namespace zimage {

struct CompanionContext {
  /// The tokenizer files shipped with the plugin (for seeded weights).
  mold::TokenizerFiles tokenizer;
  /// The plugin's estimators, for architectures the registered ones do not
  /// know (a config.json's).
  std::shared_ptr<const ZImageEstimators> estimators;
};

}  // namespace zimage
