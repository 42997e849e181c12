#include "mold/model/decoder_layer.hpp"

#include <cmath>

#include "mold/base/error.hpp"
#include "mold/tensor/rms_norm.hpp"
#include "mold/tensor/rotary.hpp"

namespace mold {

namespace {

at::Tensor required(const LayerWeights& weights, const std::string& name) {
  at::Tensor t = weights(name);
  if (!t.defined())
    throw InvalidArgument("the decoder layer has no weight '" + name + "'");
  return t;
}

at::Tensor project(const at::Tensor& x, const LayerWeights& weights,
                   const std::string& prefix) {
  const at::Tensor bias = weights(prefix + ".bias");
  return at::linear(x, required(weights, prefix + ".weight"),
                    bias.defined() ? c10::optional<at::Tensor>(bias)
                                   : c10::optional<at::Tensor>());
}

}  // namespace

std::vector<std::pair<std::string, std::vector<int64_t>>>
decoder_layer_parameters(const DecoderLayerConfig& c) {
  const int64_t hidden = c.hidden_size, mid = c.intermediate_size;
  const int64_t q_out = c.heads * c.head_dim, kv_out = c.kv_heads * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out = {
      {"input_layernorm.weight", {hidden}},
      {"post_attention_layernorm.weight", {hidden}}};
  const auto projection = [&](const std::string& name,
                              std::vector<int64_t> shape, bool bias) {
    out.emplace_back(name + ".weight", shape);
    if (bias) out.emplace_back(name + ".bias", std::vector<int64_t>{shape[0]});
  };
  projection("self_attn.q_proj", {q_out, hidden}, c.qkv_bias);
  projection("self_attn.k_proj", {kv_out, hidden}, c.qkv_bias);
  projection("self_attn.v_proj", {kv_out, hidden}, c.qkv_bias);
  projection("self_attn.o_proj", {hidden, q_out}, c.output_bias);
  if (c.query_norm) {
    out.emplace_back("self_attn.q_norm.weight",
                     std::vector<int64_t>{c.head_dim});
    out.emplace_back("self_attn.k_norm.weight",
                     std::vector<int64_t>{c.head_dim});
  }
  projection("mlp.gate_proj", {mid, hidden}, false);
  projection("mlp.up_proj", {mid, hidden}, false);
  projection("mlp.down_proj", {hidden, mid}, false);
  return out;
}

at::Tensor causal_padding_blocked(const at::Tensor& attention_mask,
                                  c10::Device device) {
  const int64_t b = attention_mask.size(0), len = attention_mask.size(1);
  const at::Tensor future =
      at::ones({len, len}, at::TensorOptions().dtype(at::kBool).device(device))
          .triu(1);
  const at::Tensor padding = attention_mask.to(device).eq(0);
  return future.view({1, 1, 1, len, len}) | padding.view({b, 1, 1, 1, len});
}

at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayerConfig& c,
                         const LayerWeights& weights, const at::Tensor& cos,
                         const at::Tensor& sin, const at::Tensor& blocked) {
  const int64_t b = x.size(0), len = x.size(1), heads = c.heads,
                kv_heads = c.kv_heads, d = c.head_dim;
  const int64_t groups = heads / kv_heads;
  const auto norm = [&](const at::Tensor& t, const std::string& name) {
    return transformers_rms_norm(t, required(weights, name), c.rms_norm_eps);
  };
  at::Tensor attended;
  {
    const at::Tensor h = norm(x, "input_layernorm.weight");
    at::Tensor q =
        project(h, weights, "self_attn.q_proj").view({b, len, heads, d});
    at::Tensor k =
        project(h, weights, "self_attn.k_proj").view({b, len, kv_heads, d});
    if (c.query_norm) {
      q = norm(q, "self_attn.q_norm.weight");
      k = norm(k, "self_attn.k_norm.weight");
    }
    const at::Tensor v = project(h, weights, "self_attn.v_proj")
                             .view({b, len, kv_heads, d})
                             .transpose(1, 2);
    q = q.transpose(1, 2);
    k = k.transpose(1, 2);
    q = q * cos + rotate_half(q) * sin;  // (B, H, L, D)
    k = k * cos + rotate_half(k) * sin;  // (B, KV, L, D)
    // Grouped-query attention without repeating K and V: head h uses
    // key/value head h / groups, so the heads of one group stack as rows.
    q = q.reshape({b, kv_heads, groups * len, d});
    at::Tensor scores = at::matmul(q, k.transpose(-1, -2));
    q.reset();
    k.reset();
    scores.mul_(1.0 / std::sqrt(double(d)));
    scores.view({b, kv_heads, groups, len, len})
        .masked_fill_(blocked, lowest_finite(scores.scalar_type()));
    // Softmax in float32, as transformers' eager attention.
    at::Tensor probs =
        at::softmax(scores, -1, at::kFloat).to(scores.scalar_type());
    scores.reset();
    attended = at::matmul(probs, v)
                   .view({b, heads, len, d})
                   .transpose(1, 2)
                   .reshape({b, len, heads * d});
  }
  at::Tensor out = x + project(attended, weights, "self_attn.o_proj");
  attended.reset();
  const at::Tensor h = norm(out, "post_attention_layernorm.weight");
  at::Tensor gate = project(h, weights, "mlp.gate_proj");
  gate = at::silu_(gate).mul_(project(h, weights, "mlp.up_proj"));
  return out.add_(project(gate, weights, "mlp.down_proj"));
}

}  // namespace mold
