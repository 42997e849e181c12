#pragma once
/// Text encoders: token ids to the hidden states a denoiser is conditioned on.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "mold/model/decoder_layer.hpp"
#include "mold/model/module.hpp"

namespace mold {

class TextEncoder : public Module {
 public:
  /// `input_ids`: (B, L) int64; `attention_mask`: (B, L), nonzero for a real
  /// token, 0 for padding (padding is never attended to). Returns (B, L,
  /// hidden_size()) in the parameters' dtype: the hidden state the family's
  /// pipeline conditions on (Z-Image: the second-to-last layer's output).
  /// Throws InvalidArgument naming the tensor for shapes, dtypes or ids out of
  /// range.
  virtual at::Tensor encode(const at::Tensor& input_ids,
                            const at::Tensor& attention_mask) const = 0;
  virtual int64_t hidden_size() const = 0;
  virtual int64_t vocab_size() const = 0;
  /// A text encoder reads every matrix through weight(), weights_under()
  /// or rows_of() (its embeddings): quantized files' matrices stay quantized.
  bool reads_quantized_weights() const override { return true; }

 protected:
  /// input_ids (B, L) int64, at least one token, at most `max_positions`,
  /// every id in [0, vocab_size()); InvalidArgument naming the first that
  /// is not (its shape, dtype, or position and value).
  void check_token_ids(const at::Tensor& input_ids,
                       int64_t max_positions) const;
  /// attention_mask defined, of input_ids' shape, bool or integer.
  static void check_attention_mask(const at::Tensor& input_ids,
                                   const at::Tensor& attention_mask);

  /// The model loop the decoder-only encoders share: `count` layers, the
  /// i-th's parameters under `prefix` + "i." (e.g. "model.layers.").
  void declare_decoder_layers(const std::string& prefix, int64_t count,
                              const DecoderLayerConfig& config);
  /// x (B, L, hidden) through the first `count` of them: later tokens and
  /// padding (`attention_mask` (B, L) zero) never attended to; cos and sin
  /// as decoder_layer takes them.
  at::Tensor run_decoder_layers(at::Tensor x, const std::string& prefix,
                                int64_t count, const DecoderLayerConfig& config,
                                const at::Tensor& cos, const at::Tensor& sin,
                                const at::Tensor& attention_mask) const;
};

}  // namespace mold
