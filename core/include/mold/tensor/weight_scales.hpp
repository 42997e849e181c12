#pragma once
/// The tensors an fp8 checkpoint stores beside its weights, read from their
/// names as ComfyUI and the references write them:
/// - `<layer>.scale_weight` (ComfyUI's "scaled fp8", with a `scaled_fp8`
///   marker) and `<layer>.weight_scale` (ComfyUI's newer format, with a
///   `<layer>.comfy_quant` tag; also transformers' per-row FBGEMM fp8): the
///   weight's values are its fp8 values times this scale, one for the
///   tensor or one per row;
/// - `<layer>.scale_input` / `<layer>.input_scale`, the tags and markers: used
///   only by fp8 matrix multiplication, which mold does not do (it decodes
///   the weight, as the references do without it), so they are dropped;
/// - the tensors of other quantizations (block-wise fp8, nvfp4, bitsandbytes,
///   SVDQuant, compressed-tensors), which mold refuses by their name.
/// Torch-free: TensorListing sets these companions aside, so that layouts
/// only see weights.

#include <optional>
#include <string>

namespace mold {

struct WeightCompanion {
  std::string weight;  ///< the weight it belongs to: "<layer>.weight"
  bool scale = false;  ///< its values scale the weight's (else dropped)
};

/// What `name` is beside the weights, when it is a companion: the scale of
/// "<layer>.weight", or a tensor that is dropped (an input scale, a
/// comfy_quant tag, the scaled_fp8 marker, whose `weight` is empty).
std::optional<WeightCompanion> weight_companion(const std::string& name);

/// The quantization a tensor named `name` belongs to when it is one mold
/// does not read ("nvfp4 (ComfyUI)", "bitsandbytes 4-bit", ...).
std::optional<std::string> unread_quantization(const std::string& name);

}  // namespace mold
