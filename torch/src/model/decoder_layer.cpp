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
