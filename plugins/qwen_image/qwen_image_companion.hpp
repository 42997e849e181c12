#pragma once
// What the qwen_image plugin (qwen_image_plugin.cpp, torch-free) hands its
// companion (qwen_image_companion.cpp, the library `qwen_image/torch.so` that
// builds the family's models and pipelines; mold/plugin/companion.hpp).

#include <memory>
#include <mold/catalog/model_family.hpp>

#include "qwen_image_estimators.hpp"

namespace qwen_image {

struct CompanionContext {
  /// The tokenizer files shipped with the plugin (for seeded weights).
  mold::TokenizerFiles tokenizer;
  /// The plugin's estimators, for architectures the registered ones do not
  /// know (a model directory's config.json).
  std::shared_ptr<const QwenImageEstimators> estimators;
};

}  // namespace qwen_image
