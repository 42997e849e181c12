#pragma once
/// The counted stages of a decoder-only language model's layer as mold's
/// text encoders run it (Qwen3 for Z-Image, Qwen2.5-VL's language model for
/// Qwen-Image): RMS norms with float32 statistics, grouped-query math
/// attention over all token pairs with a float32 softmax, a SwiGLU
/// feed-forward. What the two differ in is a field of DecoderDims.

#include "mold/estimate/sequence_model.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

/// Where a decoder keeps its rotary tables through the layers.
enum class RotaryTables {
  /// One (tokens, head_dim) table for the batch: the float32 frequencies
  /// and angles (1.5 x head_dim per token) and cos and sin in the dtype
  /// (Qwen3).
  shared_with_float32_angles,
  /// cos and sin in the dtype per batch item, built from several position
  /// axes whose float32 angles are freed (Qwen2.5-VL's multimodal rotary).
  per_item,
};

/// The sizes and variants that decide a decoder layer's working memory.
struct DecoderDims {
  long hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  /// q and k normed per head (Qwen3's q_norm, k_norm) before the rotation.
  bool query_norm = false;
  RotaryTables rotary = RotaryTables::shared_with_float32_angles;
};

/// text_encode of workload.tokens real tokens (no padding), per layer, as
/// a probe of the tracking allocator counts it. Alive through every layer:
/// the hidden states, the causal and padding masks (bool, tokens^2 each)
/// and the rotary tables (dims.rotary). Three stages peak apart, each beside
/// the hidden states and the normed input:
///  - projection: with query_norm, q (heads x head_dim wide) and its
///    per-head RMS norm (its float32 copy, none when the dtype is float32,
///    product, cast and scaled result alive at once); without, q's rotation
///    (q x cos, rotate_half(q), its product with sin and the sum) beside k
///    and v;
///  - attention: the scores, softmax(.., float32)'s float32 output and its
///    float32 copy of scores in another dtype, beside v;
///  - feed-forward: gate and up (intermediate wide) beside the hidden states,
///    the residual sum and the normed input.
/// Each stage also has the threads' scratch of its matrix products and what
/// is alive while they run: less than the projection's and the attention's
/// peaks (an elementwise step: q's float32 norm, the float32 softmax), the
/// feed-forward's own peak (up beside gate).
/// A quantized encoder (workload.quantized) also holds its largest matrix
/// dequantized in the dtype while that layer runs.
SequenceShape decoder_text_encode_shape(const Workload& workload,
                                        const DecoderDims& dims);

}  // namespace mold
