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

Qwen3TextEncoder::Qwen3TextEncoder(const Qwen3Config& config, std::string arch)
    : config_(config), arch_(std::move(arch)) {
  const Qwen3Config& c = config_;
  add("embed_tokens.weight", {c.vocab_size, c.hidden_size});
  declare_decoder_layers("layers.", c.num_hidden_layers, layer_config());
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

mold::DecoderLayerConfig Qwen3TextEncoder::layer_config() const {
  mold::DecoderLayerConfig c;
  c.hidden_size = config_.hidden_size;
  c.intermediate_size = config_.intermediate_size;
  c.heads = config_.num_attention_heads;
  c.kv_heads = config_.num_key_value_heads;
  c.head_dim = config_.head_dim;
  c.rms_norm_eps = config_.rms_norm_eps;
  c.query_norm = true;  // q_norm and k_norm
  c.qkv_bias = c.output_bias = config_.attention_bias;
  return c;
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
  const int64_t len = input_ids.size(1);

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

  x = run_decoder_layers(std::move(x), "layers.", std::min(k, n),
                         layer_config(), cos, sin, attention_mask);
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
