#pragma once
/// The layer of the decoder-only language models mold runs as text encoders
/// (transformers' Qwen2, Qwen2.5-VL's language model, Qwen3), written once:
/// RMS norms with float32 statistics, grouped-query eager attention with a
/// float32 softmax, a SwiGLU feed-forward. What the models differ in is a
/// field of DecoderLayerConfig; the weights come from the model through a
/// lookup, so the layer holds none. Its working memory is counted by
/// mold/estimate/decoder_stages.hpp: a change here is a change there.

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mold {

struct DecoderLayerConfig {
  int64_t hidden_size = 0, intermediate_size = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  double rms_norm_eps = 1e-6;
  /// q and k normed per head (Qwen3's self_attn.q_norm / k_norm) before the
  /// rotation.
  bool query_norm = false;
  /// Biases of the q, k and v projections (Qwen2's), and of o_proj too
  /// (Qwen3's attention_bias sets both).
  bool qkv_bias = false, output_bias = false;
};

/// The layer's parameters, named under the layer's prefix
/// ("self_attn.q_proj.weight"), with their shapes, for a model to declare.
std::vector<std::pair<std::string, std::vector<int64_t>>>
decoder_layer_parameters(const DecoderLayerConfig& config);

/// What no query may attend to: later tokens, and padding (`attention_mask`
/// (B, L) zero). (B, 1, 1, L, L) bool on `device`, for decoder_layer.
at::Tensor causal_padding_blocked(const at::Tensor& attention_mask,
                                  c10::Device device);

/// A weight of the layer by its name under the layer's prefix
/// ("self_attn.q_proj.weight"), in the layer's dtype (a quantized matrix
/// dequantized for this use); an undefined tensor where the model has none
/// (a bias).
using LayerWeights = std::function<at::Tensor(const std::string&)>;

/// x (B, L, hidden) through one layer. cos and sin broadcast against
/// (B, heads, L, head_dim) (the rotate_half convention); `blocked` (bool,
/// broadcasting against (B, kv_heads, heads / kv_heads, L, L)) is what no
/// query may attend to. Throws InvalidArgument naming a missing weight.
at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayerConfig& config,
                         const LayerWeights& weights, const at::Tensor& cos,
                         const at::Tensor& sin, const at::Tensor& blocked);

}  // namespace mold
