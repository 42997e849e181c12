#pragma once
/// The two rotary position embedding conventions of the models mold runs,
/// and the value eager attention masks scores with. Each is the reference
/// code's arithmetic, step for step, so that outputs match it closely.

#include <ATen/ATen.h>

namespace mold {

/// (x1, x2) -> (-x2, x1) over the halves of the last dimension: the rotary
/// of transformers' Llama-family models (q cos + rotate_half(q) sin).
at::Tensor rotate_half(const at::Tensor& x);

/// x (..., D) rotated by angles whose cos and sin are (..., D / 2) and
/// broadcast against x's leading dimensions: each pair (x[2j], x[2j+1]) is a
/// complex number multiplied by (cos + i sin), in float32 (diffusers'
/// view_as_complex rotary of Z-Image and Qwen-Image); back in x's dtype.
at::Tensor rotate_interleaved_pairs(const at::Tensor& x, const at::Tensor& cos,
                                    const at::Tensor& sin);

/// The most negative finite value of `dtype`: what transformers' eager
/// attention adds to the scores it masks (finfo(dtype).min), so that a row
/// with nothing to attend to stays finite as it does there.
double lowest_finite(at::ScalarType dtype);

}  // namespace mold
