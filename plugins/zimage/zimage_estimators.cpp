#include "zimage_estimators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>

#include "qwen3_text_encoder.hpp"
#include "zimage_transformer.hpp"

namespace zimage {

namespace {

constexpr long kSeqMultiple = 32;        // the transformer pads each sequence
constexpr long kScoreBudget = 1L << 25;  // the transformer's attention chunk
// The text encoder's softmax runs in float32 whatever the dtype, and its
// scores, the float32 probabilities and their cast back live at once: about
// 8 bytes a score in every dtype, counted as 4-byte elements.
constexpr double kTextScoreElement = 4;

long round_up(long value, long multiple) {
  return (value + multiple - 1) / multiple * multiple;
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
  return {long(c.hidden_size), long(c.num_attention_heads)};
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
  return {long(c.dim), long(c.n_heads)};
}

mold::SequenceShape text_encode_shape(const mold::Workload& w,
                                      const TextEncoderDims& d) {
  const double n = double(std::max(w.tokens, 1));
  mold::SequenceShape s;
  s.tokens = n;
  s.width = double(d.hidden);
  s.element = double(mold::dtype_size(w.dtype));
  s.scores = n * n * double(d.heads);
  s.score_element = kTextScoreElement;
  s.tokens_detail = fmt::format("{} tokens", w.tokens);
  s.scores_detail = fmt::format(
      "{0}^2 token pairs x {1} heads (float32 softmax)", w.tokens, d.heads);
  return s;
}

mold::SequenceShape denoise_shape(const mold::Workload& w,
                                  const TransformerDims& d) {
  const long image_tokens = long(w.height / 16) * long(w.width / 16);
  const long tokens = round_up(image_tokens, kSeqMultiple) +
                      round_up(std::max(w.tokens, 1), kSeqMultiple);
  // Attention runs in chunks of query rows holding at most kScoreBudget
  // scores of the whole batch (at least one row).
  const long per_row = long(w.batch) * d.heads * tokens;
  const long rows =
      std::min<long>(tokens, std::max<long>(1, kScoreBudget / per_row));
  mold::SequenceShape s;
  s.tokens = double(tokens);
  s.width = double(d.dim);
  s.element = double(mold::dtype_size(w.dtype));
  s.scores = double(rows) * double(tokens) * double(d.heads);
  s.score_element = s.element;
  s.tokens_detail =
      fmt::format("{} tokens ({} image + {} caption, each padded to {})",
                  tokens, image_tokens, w.tokens, kSeqMultiple);
  s.scores_detail =
      fmt::format("{} query rows x {} keys x {} heads", rows, tokens, d.heads);
  return s;
}

ZImageEstimators::ZImageEstimators(const mold::CalibrationFile& file,
                                   const std::filesystem::path& path)
    : tables_(file, path, "zimage",
              {std::string(mold::ops::kTextEncode),
               std::string(mold::ops::kDenoise)}) {}

mold::Estimate ZImageEstimators::text_encode(const mold::Workload& w,
                                             const TextEncoderDims& d) const {
  return tables_.table(mold::ops::kTextEncode, w.backend)
      .estimate(w, text_encode_shape(w, d));
}

mold::Estimate ZImageEstimators::denoise(const mold::Workload& w,
                                         const TransformerDims& d) const {
  return tables_.table(mold::ops::kDenoise, w.backend)
      .estimate(w, denoise_shape(w, d));
}

void register_transformer_estimators(mold::Registrar& registrar,
                                     const ZImageEstimators& estimators) {
  registrar.add_estimator({"zimage", std::string(mold::ops::kTextEncode), "*"},
                          [estimators](const mold::Workload& w) {
                            return estimators.text_encode(
                                w, text_encoder_dims(w.arch));
                          });
  registrar.add_estimator({"zimage", std::string(mold::ops::kDenoise), "*"},
                          [estimators](const mold::Workload& w) {
                            return estimators.denoise(w,
                                                      transformer_dims(w.arch));
                          });
}

}  // namespace zimage
