#include "mold/tensor/weight_scales.hpp"

#include "mold/base/text.hpp"

namespace mold {

namespace {

/// `name` without `suffix`, when it ends with it after something.
std::optional<std::string> before(const std::string& name,
                                  const std::string& suffix) {
  if (name.size() <= suffix.size() || !ends_with(name, suffix))
    return std::nullopt;
  return name.substr(0, name.size() - suffix.size());
}

}  // namespace

std::optional<WeightCompanion> weight_companion(const std::string& name) {
  for (const char* suffix : {".scale_weight", ".weight_scale"})
    if (const auto layer = before(name, suffix))
      return WeightCompanion{*layer + ".weight", true};
  for (const char* suffix : {".scale_input", ".input_scale", ".comfy_quant"})
    if (const auto layer = before(name, suffix))
      return WeightCompanion{*layer + ".weight", false};
  if (name == "scaled_fp8" || ends_with(name, ".scaled_fp8"))
    return WeightCompanion{};
  return std::nullopt;
}

std::optional<std::string> unread_quantization(const std::string& name) {
  struct Marker {
    const char* suffix;
    const char* quantization;
  };
  static const Marker kMarkers[] = {
      {".weight_scale_inv", "block-wise fp8 (128x128 weight_scale_inv)"},
      {".weight_scale_2", "nvfp4 (ComfyUI)"},
      {".absmax", "bitsandbytes 4-bit"},
      {".quant_map", "bitsandbytes 4-bit"},
      {".quant_state.bitsandbytes__nf4", "bitsandbytes 4-bit (nf4)"},
      {".quant_state.bitsandbytes__fp4", "bitsandbytes 4-bit (fp4)"},
      {".SCB", "bitsandbytes 8-bit"},
      {".weight_format", "bitsandbytes 8-bit"},
      {".qweight", "SVDQuant/Nunchaku or AWQ"},
      {".wscales", "SVDQuant/Nunchaku or AWQ"},
      {".weight_packed", "compressed-tensors"},
      {".weight_global_scale", "compressed-tensors"},
  };
  for (const auto& marker : kMarkers)
    if (before(name, marker.suffix)) return std::string(marker.quantization);
  return std::nullopt;
}

}  // namespace mold
