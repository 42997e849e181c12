#include "qwen3_text_encoder.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/arch_config.hpp>
#include <mold/model/decoder_layer.hpp>
#include <mold/tensor/rms_norm.hpp>
#include <mold/tensor/weight_set.hpp>
#include <utility>

namespace zimage {

using mold::ConfigError;
using mold::InvalidArgument;
using mold::JsonConfig;

namespace {

std::string layer_param(int64_t layer, const char* rest) {
  return fmt::format("layers.{}.{}", layer, rest);
}

}  // namespace

Qwen3TextEncoder::Qwen3TextEncoder(const Qwen3Config& config, std::string arch)
    : config_(config), arch_(std::move(arch)) {
  const Qwen3Config& c = config_;
  const int64_t q_out = c.num_attention_heads * c.head_dim;
  const int64_t kv_out = c.num_key_value_heads * c.head_dim;
  add("embed_tokens.weight", {c.vocab_size, c.hidden_size});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    add(layer_param(i, "input_layernorm.weight"), {c.hidden_size});
    add(layer_param(i, "post_attention_layernorm.weight"), {c.hidden_size});
    const std::pair<const char*, std::vector<int64_t>> projections[] = {
        {"self_attn.q_proj", {q_out, c.hidden_size}},
        {"self_attn.k_proj", {kv_out, c.hidden_size}},
        {"self_attn.v_proj", {kv_out, c.hidden_size}},
        {"self_attn.o_proj", {c.hidden_size, q_out}}};
    for (const auto& [name, shape] : projections) {
      add(layer_param(i, name) + ".weight", shape);
      if (c.attention_bias) add(layer_param(i, name) + ".bias", {shape[0]});
    }
    add(layer_param(i, "self_attn.q_norm.weight"), {c.head_dim});
    add(layer_param(i, "self_attn.k_norm.weight"), {c.head_dim});
    add(layer_param(i, "mlp.gate_proj.weight"),
        {c.intermediate_size, c.hidden_size});
    add(layer_param(i, "mlp.up_proj.weight"),
        {c.intermediate_size, c.hidden_size});
    add(layer_param(i, "mlp.down_proj.weight"),
        {c.hidden_size, c.intermediate_size});
  }
  add("norm.weight", {c.hidden_size});
}

std::string Qwen3TextEncoder::describe() const {
  return "zimage text encoder (Qwen3, " + arch_ + ")";
}

std::string Qwen3TextEncoder::checkpoint_prefix(
    const mold::WeightSet& weights) {
  return weights.contains("model.embed_tokens.weight") ? "model." : "";
}

void Qwen3TextEncoder::check_inputs(const at::Tensor& ids,
                                    const at::Tensor& mask) const {
  check_token_ids(ids, config_.max_position_embeddings);
  check_attention_mask(ids, mask);
}

at::Tensor Qwen3TextEncoder::rms_norm(const at::Tensor& x,
                                      const std::string& weight) const {
  return mold::transformers_rms_norm(x, p(weight), config_.rms_norm_eps);
}

at::Tensor Qwen3TextEncoder::decoder_layer(const at::Tensor& x, int64_t layer,
                                           const at::Tensor& cos,
                                           const at::Tensor& sin,
                                           const at::Tensor& blocked) const {
  mold::DecoderLayerConfig c;
  c.heads = config_.num_attention_heads;
  c.kv_heads = config_.num_key_value_heads;
  c.head_dim = config_.head_dim;
  c.rms_norm_eps = config_.rms_norm_eps;
  c.query_norm = true;  // q_norm and k_norm
  return mold::decoder_layer(
      x, c, weights_under(fmt::format("layers.{}.", layer)), cos, sin, blocked);
}

at::Tensor Qwen3TextEncoder::hidden_state(const at::Tensor& input_ids,
                                          const at::Tensor& attention_mask,
                                          int64_t index) const {
  const int64_t n = config_.num_hidden_layers;
  if (index < -(n + 1) || index > n)
    throw InvalidArgument(fmt::format(
        "hidden state {} does not exist: {} has {} (0 to {}, or -{} to -1)",
        index, describe(), n + 1, n, n + 1));
  const int64_t k = index < 0 ? index + n + 1 : index;
  check_inputs(input_ids, attention_mask);
  at::NoGradGuard no_grad;
  const c10::Device device = this->device();
  const at::ScalarType dtype = this->dtype();
  const int64_t b = input_ids.size(0), len = input_ids.size(1);

  at::Tensor x = rows_of("embed_tokens.weight", input_ids.to(device));
  if (k == 0) return x;

  // Rotary tables in float32 (positions 0..L-1 whatever the padding, as
  // transformers), then in the parameters' dtype.
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  const at::Tensor exponents =
      at::arange(0, config_.head_dim, 2, at::TensorOptions().dtype(at::kLong))
          .to(f32) /
      double(config_.head_dim);
  const at::Tensor inv_freq =
      at::reciprocal(at::pow(config_.rope_theta, exponents));
  const at::Tensor freqs = at::outer(at::arange(len, f32), inv_freq);
  const at::Tensor angles = at::cat({freqs, freqs}, -1);  // (L, D)
  const at::Tensor cos = angles.cos().to(dtype);
  const at::Tensor sin = angles.sin().to(dtype);

  // What no query may attend to: later tokens and padding. (B, 1, 1, L, L)
  // against scores viewed as (B, KV, groups, L, L).
  const at::Tensor future =
      at::ones({len, len}, at::TensorOptions().dtype(at::kBool).device(device))
          .triu(1);
  const at::Tensor padding = attention_mask.to(device).eq(0);
  const at::Tensor blocked =
      future.view({1, 1, 1, len, len}) | padding.view({b, 1, 1, 1, len});

  for (int64_t layer = 0; layer < std::min(k, n); ++layer)
    x = decoder_layer(x, layer, cos, sin, blocked);
  if (k == n) x = rms_norm(x, "norm.weight");
  return x;
}

at::Tensor Qwen3TextEncoder::encode(const at::Tensor& input_ids,
                                    const at::Tensor& attention_mask) const {
  return hidden_state(input_ids, attention_mask, -2);
}

std::unique_ptr<mold::TextEncoder> make_qwen3_text_encoder(
    const mold::ArchSpec& arch) {
  return std::make_unique<Qwen3TextEncoder>(
      mold::config_for_arch<Qwen3Config>(arch, "the zimage text encoder"),
      arch.describe());
}

}  // namespace zimage
