#pragma once
/// What to make, apart from an edit's source images: the prompt, the size, the
/// steps, the guidance, the seed and the batch. Torch-free, so that a client
/// (mold run against a server) reads and sends them without libtorch;
/// runtime/pipeline.hpp's GenerateRequest adds the source images as tensors.

#include <cstdint>
#include <optional>
#include <string>

#include "mold/plan/field_naming.hpp"

namespace mold {

/// Sizes in pixels.
struct GenerateSettings {
  std::string prompt;
  /// none: not given. Qwen-Image runs true CFG only with a negative prompt,
  /// the empty one included (as diffusers: negative_prompt is not None);
  /// Z-Image takes none as the empty prompt.
  std::optional<std::string> negative_prompt;
  int width = 0;                   ///< 0: the model's default
  int height = 0;                  ///< 0: the model's default
  int steps = 0;                   ///< 0: the model's default
  std::optional<double> guidance;  ///< none: the model's default
  std::uint64_t seed = 0;          ///< image i of a batch uses seed + i
  int batch = 1;
  /// How messages about this request name its fields: mold run's flags, or
  /// (mold serve) the JSON paths the client sent.
  FieldNaming naming = FieldNaming::flags;
};

}  // namespace mold
