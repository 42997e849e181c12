#pragma once
// The Qwen3 text encoder of Z-Image (transformers' Qwen3Model: Qwen3-4B in the
// published Z-Image-Turbo), returning the hidden state Z-Image's pipeline
// conditions on: transformers' hidden_states[-2], the output of the
// second-to-last decoder layer, before the final norm.

#include <cstdint>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/config/json_config.hpp>
#include <mold/model/text_encoder.hpp>
#include <string>

#include "qwen3_config.hpp"

namespace mold {
class WeightSet;
}

namespace zimage {

class Qwen3TextEncoder final : public mold::TextEncoder {
 public:
  /// Declares the parameters (shapes only) under the names of transformers'
  /// Qwen3Model: `embed_tokens.weight`, `layers.N.self_attn.q_proj.weight`,
  /// ..., `norm.weight`. The published checkpoint (Qwen3ForCausalLM) stores
  /// them under `model.`: see checkpoint_prefix().
  Qwen3TextEncoder(const Qwen3Config& config, std::string arch);

  std::string describe() const override;
  /// hidden_state(input_ids, attention_mask, -2).
  at::Tensor encode(const at::Tensor& input_ids,
                    const at::Tensor& attention_mask) const override;
  /// transformers' `hidden_states[index]` of Qwen3Model with
  /// output_hidden_states: 0 is the embeddings, i in [1, N) the output of
  /// decoder layer i-1, N the final norm of the last layer's output (N =
  /// num_hidden_layers); negative indices count from the end (-1 is N). Only
  /// the layers needed run. Attention is causal and never attends to padding
  /// (attention_mask 0); positions are 0..L-1 whatever the padding, as in
  /// transformers. InvalidArgument for an index out of [-(N+1), N].
  at::Tensor hidden_state(const at::Tensor& input_ids,
                          const at::Tensor& attention_mask,
                          int64_t index) const;
  int64_t hidden_size() const override { return config_.hidden_size; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  const Qwen3Config& config() const { return config_; }

  /// The prefix of this model's names in `weights`: "model." for a
  /// Qwen3ForCausalLM checkpoint (the published Z-Image text_encoder/), ""
  /// for a Qwen3Model one (decided by where `embed_tokens.weight` is).
  static std::string checkpoint_prefix(const mold::WeightSet& weights);
  std::string stored_prefix(const mold::WeightSet& weights) const override {
    return checkpoint_prefix(weights);
  }

 private:
  void check_inputs(const at::Tensor& input_ids,
                    const at::Tensor& attention_mask) const;
  at::Tensor rms_norm(const at::Tensor& x, const std::string& weight) const;
  /// The language model's layer, as the shared decoder layer takes it.
  mold::DecoderLayerConfig layer_config() const;

  Qwen3Config config_;
  std::string arch_;
};

/// The registry's text encoder factory: "default" (Qwen3-4B), "tiny", or a
/// transformers config.json. Parameters declared only; the caller seeds or
/// loads them. InvalidArgument for an unknown built-in name.
std::unique_ptr<mold::TextEncoder> make_qwen3_text_encoder(
    const mold::ArchSpec& arch);

}  // namespace zimage
