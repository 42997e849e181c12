#pragma once
/// The two RMSNorms the references use. Both take the mean square in float32;
/// they differ in where the result returns to half precision, which rounds
/// differently, so each model calls the one its reference uses.

#include <ATen/ATen.h>

namespace mold {

/// diffusers' RMSNorm (the transformers' blocks): x / rms(x), cast to the
/// weight's dtype when that is float16 or bfloat16, then scaled by weight.
at::Tensor diffusers_rms_norm(const at::Tensor& x, const at::Tensor& weight,
                              double eps);

/// transformers' Qwen2RMSNorm / Qwen3RMSNorm (the text encoders): the
/// statistics and the normalised value in float32, back in x's dtype, then
/// the scale.
at::Tensor transformers_rms_norm(const at::Tensor& x, const at::Tensor& weight,
                                 double eps);

}  // namespace mold
