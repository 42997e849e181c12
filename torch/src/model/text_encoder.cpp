#include "mold/model/text_encoder.hpp"

#include <fmt/format.h>

#include "mold/base/error.hpp"

namespace mold {

void TextEncoder::check_token_ids(const at::Tensor& ids,
                                  int64_t max_positions) const {
  if (!ids.defined()) throw InvalidArgument("input_ids is undefined");
  if (ids.dim() != 2)
    throw InvalidArgument(
        fmt::format("input_ids has shape {}; {} expects (batch, tokens)",
                    c10::str(ids.sizes()), describe()));
  if (ids.scalar_type() != at::kLong)
    throw InvalidArgument(fmt::format("input_ids has dtype {}; expected int64",
                                      c10::toString(ids.scalar_type())));
  if (ids.numel() == 0)
    throw InvalidArgument(fmt::format("input_ids has shape {}: no tokens",
                                      c10::str(ids.sizes())));
  if (ids.size(1) > max_positions)
    throw InvalidArgument(
        fmt::format("input_ids has {} tokens; {} takes at most {} "
                    "(max_position_embeddings)",
                    ids.size(1), describe(), max_positions));
  const at::Tensor bad = ((ids < 0) | (ids >= vocab_size())).nonzero();
  if (bad.size(0) > 0) {
    const int64_t row = bad[0][0].item<int64_t>();
    const int64_t col = bad[0][1].item<int64_t>();
    throw InvalidArgument(fmt::format(
        "input_ids[{}, {}] is {}, out of the vocabulary of {}: ids are in "
        "[0, {})",
        row, col, ids[row][col].item<int64_t>(), describe(), vocab_size()));
  }
}

void TextEncoder::check_attention_mask(const at::Tensor& ids,
                                       const at::Tensor& mask) {
  if (!mask.defined()) throw InvalidArgument("attention_mask is undefined");
  if (mask.sizes() != ids.sizes())
    throw InvalidArgument(fmt::format(
        "attention_mask has shape {}; input_ids has {} and they must match",
        c10::str(mask.sizes()), c10::str(ids.sizes())));
  if (!at::isIntegralType(mask.scalar_type(), /*includeBool=*/true))
    throw InvalidArgument(
        fmt::format("attention_mask has dtype {}; expected bool or an integer "
                    "type (nonzero for a real token, 0 for padding)",
                    c10::toString(mask.scalar_type())));
}

void TextEncoder::declare_decoder_layers(const std::string& prefix,
                                         int64_t count,
                                         const DecoderLayerConfig& config) {
  const auto parameters = decoder_layer_parameters(config);
  for (int64_t i = 0; i < count; ++i)
    for (const auto& [name, shape] : parameters)
      add(fmt::format("{}{}.{}", prefix, i, name), shape);
}

at::Tensor TextEncoder::run_decoder_layers(
    at::Tensor x, const std::string& prefix, int64_t count,
    const DecoderLayerConfig& config, const at::Tensor& cos,
    const at::Tensor& sin, const at::Tensor& attention_mask) const {
  const at::Tensor blocked = causal_padding_blocked(attention_mask, x.device());
  for (int64_t i = 0; i < count; ++i)
    x = decoder_layer(x, config, weights_under(fmt::format("{}{}.", prefix, i)),
                      cos, sin, blocked);
  return x;
}

}  // namespace mold
