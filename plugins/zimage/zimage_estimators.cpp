#include "zimage_estimators.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

#include "qwen3_text_encoder.hpp"
#include "zimage_transformer.hpp"

namespace zimage {

namespace {

constexpr const char* kSource =
    "zimage_estimators.cpp: from the architecture's sizes (activations per "
    "token, math attention's scores per token pair, the feed-forward's hidden "
    "states) with 25% headroom; not yet calibrated by measurement";
constexpr double kHeadroom = 1.25;
constexpr long kSeqMultiple = 32;  // the transformer pads each sequence

long round_up(long value, long multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

mold::EstimateTerm term(const char* name, double bytes, std::string detail) {
  return {name, mold::Bytes(bytes), std::move(detail)};
}

mold::Estimate finish(std::vector<mold::EstimateTerm> terms) {
  mold::Estimate e;
  double total = 0;
  for (const auto& t : terms) total += double(t.bytes);
  terms.push_back(
      term("headroom", total * (kHeadroom - 1),
           fmt::format("{:.0f}% of the terms above", (kHeadroom - 1) * 100)));
  for (const auto& t : terms) e.bytes += t.bytes;
  e.terms = std::move(terms);
  e.calibrated = false;
  e.source = kSource;
  return e;
}

}  // namespace

TextEncoderDims text_encoder_dims(const std::string& arch) {
  if (arch != "default" && arch != "tiny")
    throw mold::InvalidArgument(fmt::format(
        "no zimage text_encode estimate for architecture '{}': only "
        "'default' and 'tiny'",
        arch));
  const Qwen3Config c = arch == "tiny" ? Qwen3Config::tiny_config()
                                       : Qwen3Config::default_config();
  return {long(c.hidden_size), long(c.intermediate_size),
          long(c.num_attention_heads), long(c.num_key_value_heads),
          long(c.head_dim)};
}

TransformerDims transformer_dims(const std::string& arch) {
  if (arch != "default" && arch != "tiny")
    throw mold::InvalidArgument(fmt::format(
        "no zimage denoise estimate for architecture '{}': only 'default' and "
        "'tiny'",
        arch));
  const ZImageTransformerConfig c =
      arch == "tiny" ? ZImageTransformerConfig::tiny_config()
                     : ZImageTransformerConfig::default_config();
  return {long(c.dim), long(c.n_heads), long(c.ffn_dim()), long(c.in_channels)};
}

mold::Estimate estimate_text_encode(const mold::Workload& w,
                                    const TextEncoderDims& d) {
  const double e = double(mold::dtype_size(w.dtype));
  const double n = double(std::max(w.tokens, 1)), b = w.batch;
  std::vector<mold::EstimateTerm> terms;
  terms.push_back(term(
      "activations",
      b * n * e *
          double(4 * d.hidden + 3 * d.heads * d.head_dim +
                 4 * d.kv_heads * d.head_dim),
      fmt::format("{} tokens x (4 x {} hidden + q/k/v and rotary copies) x "
                  "{} B x batch {}",
                  w.tokens, d.hidden, e, w.batch)));
  const double attention = b * double(d.heads) * n * n * (4 + e);
  const double mlp = b * n * e * 3 * double(d.intermediate);
  terms.push_back(attention > mlp
                      ? term("attention", attention,
                             fmt::format("{} heads x {}^2 scores x (4 + {}) B",
                                         d.heads, w.tokens, e))
                      : term("feed_forward", mlp,
                             fmt::format("{} tokens x 3 x {} x {} B", w.tokens,
                                         d.intermediate, e)));
  return finish(std::move(terms));
}

mold::Estimate estimate_denoise(const mold::Workload& w,
                                const TransformerDims& d) {
  const double e = double(mold::dtype_size(w.dtype));
  const long image_tokens = long(w.height / 16) * long(w.width / 16);
  const long tokens = round_up(image_tokens, kSeqMultiple) +
                      round_up(std::max(w.tokens, 1), kSeqMultiple);
  const double n = double(tokens), b = w.batch;
  std::vector<mold::EstimateTerm> terms;
  terms.push_back(term(
      "activations", b * n * e * 8 * double(d.dim),
      fmt::format("{} tokens ({} image + {} caption, padded to {}) x 8 x {} "
                  "x {} B x batch {}",
                  tokens, image_tokens, w.tokens, kSeqMultiple, d.dim, e,
                  w.batch)));
  const double attention = b * double(d.heads) * n * n * (4 + e);
  const double mlp = b * n * e * 3 * double(d.ffn);
  terms.push_back(attention > mlp
                      ? term("attention", attention,
                             fmt::format("{} heads x {}^2 scores x (4 + {}) B "
                                         "x batch {}",
                                         d.heads, tokens, e, w.batch))
                      : term("feed_forward", mlp,
                             fmt::format("{} tokens x 3 x {} x {} B x batch {}",
                                         tokens, d.ffn, e, w.batch)));
  // The latents and the velocity in float32, with the sampler's copies.
  const double latent = 4.0 * double(d.latent_channels) * double(w.height / 8) *
                        double(w.width / 8);
  terms.push_back(term("latents", 6 * b * latent,
                       "latent, model input, output, velocity, guidance "
                       "(float32)"));
  return finish(std::move(terms));
}

void register_transformer_estimators(mold::Registrar& registrar) {
  registrar.add_estimator(
      {"zimage", "text_encode", "*"}, [](const mold::Workload& w) {
        return estimate_text_encode(w, text_encoder_dims(w.arch));
      });
  registrar.add_estimator(
      {"zimage", "denoise", "*"}, [](const mold::Workload& w) {
        return estimate_denoise(w, transformer_dims(w.arch));
      });
}

}  // namespace zimage
