#pragma once
/// Attention as the diffusion transformers compute it, in row chunks: the
/// scores of at most mold/estimate/attention_chunk's budget at once, each
/// chunk masked, soft-maxed and multiplied by v into its rows of the output.
/// The same arithmetic as one eager attention (softmax(q k^T) v), with a
/// working set the estimates count.

#include <ATen/ATen.h>

namespace mold {

/// q (B, H, S, Dh), already scaled by 1/sqrt(Dh); k_t (B, H, Dh, S); v
/// (B, H, S, Dh); key_mask (B, S) of booleans, true for the keys attended to
/// (undefined: all): masked scores are -inf, as the diffusers pipelines mask
/// text padding. Returns (B, S, H, Dh) in q's dtype, on q's device.
at::Tensor chunked_attention(const at::Tensor& q, const at::Tensor& k_t,
                             const at::Tensor& v, const at::Tensor& key_mask);

}  // namespace mold
