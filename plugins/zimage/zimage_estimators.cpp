#include "zimage_estimators.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

#include "qwen3_text_encoder.hpp"
#include "zimage_transformer.hpp"

namespace zimage {

namespace {

// The constants were fitted to the working memory the cpu backend's tracking
// allocator measured for the tiny architectures in float32 (mold run --tiny
// --json: each phase's peak above what was allocated when it started), by
// least squares on bytes = a x tokens^2 + b x tokens:
//   denoise      (64x64 .. 512x512 px): b = 1690 B per token = 6.6 x dim x
//                element size (activations, the latents and the sampler's
//                copies), a = 2 x heads x element size (the chunked
//                attention's scores and softmax);
//   text_encode  (11 .. 488 tokens): b = 449 B = 3.5 x hidden x element
//                size, a = heads x (4 + element size) + 2 (scores, float32
//                softmax, the causal mask) = 34, plus 4 KiB.
// They transfer to the published architecture through its sizes; that
// transfer is not measured (it needs 24 GiB of float32 weights).
constexpr double kDenoisePerTokenDim = 6.6;
constexpr double kTextPerTokenHidden = 3.5;
constexpr double kTextFixed = 4096;
constexpr double kHeadroom = 1.05;
constexpr long kSeqMultiple = 32;        // the transformer pads each sequence
constexpr long kScoreBudget = 1L << 25;  // the transformer's attention chunk

constexpr const char* kSourceTiny =
    "zimage_estimators.cpp: fitted on the tiny architectures' working memory "
    "measured by the cpu backend's tracking allocator (float32), 5% headroom";
constexpr const char* kSourceDefault =
    "zimage_estimators.cpp: the tiny architectures' fitted constants applied "
    "to the published sizes, 5% headroom; not measured at these sizes";

long round_up(long value, long multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

mold::EstimateTerm term(const char* name, double bytes, std::string detail) {
  return {name, mold::Bytes(bytes), std::move(detail)};
}

mold::Estimate finish(const mold::Workload& w,
                      std::vector<mold::EstimateTerm> terms) {
  mold::Estimate e;
  double total = 0;
  for (const auto& t : terms) total += double(t.bytes);
  terms.push_back(
      term("headroom", total * (kHeadroom - 1),
           fmt::format("{:.0f}% of the terms above", (kHeadroom - 1) * 100)));
  for (const auto& t : terms) e.bytes += t.bytes;
  e.terms = std::move(terms);
  e.calibrated = w.arch == "tiny" && w.backend == "cpu";
  e.source = w.arch == "tiny" ? kSourceTiny : kSourceDefault;
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
  return {long(c.dim), long(c.n_heads)};
}

mold::Estimate estimate_text_encode(const mold::Workload& w,
                                    const TextEncoderDims& d) {
  const double e = double(mold::dtype_size(w.dtype));
  const double n = double(std::max(w.tokens, 1)), b = w.batch;
  std::vector<mold::EstimateTerm> terms;
  terms.push_back(
      term("activations",
           b * (kTextPerTokenHidden * n * double(d.hidden) * e + kTextFixed),
           fmt::format("{} x {} tokens x {} hidden x {} B x batch {}, + 4 KiB",
                       kTextPerTokenHidden, w.tokens, d.hidden, e, w.batch)));
  terms.push_back(term(
      "attention", b * n * n * (double(d.heads) * (4 + e) + 2),
      fmt::format("{}^2 token pairs x ({} heads x (4 + {}) B + 2 B) x batch "
                  "{}",
                  w.tokens, d.heads, e, w.batch)));
  return finish(w, std::move(terms));
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
      "activations", kDenoisePerTokenDim * b * n * double(d.dim) * e,
      fmt::format("{} x {} tokens ({} image + {} caption, each padded to {}) "
                  "x {} dim x {} B x batch {}",
                  kDenoisePerTokenDim, tokens, image_tokens, w.tokens,
                  kSeqMultiple, d.dim, e, w.batch)));
  // Attention runs in chunks of query rows holding at most kScoreBudget
  // scores (at least one row).
  const long per_row = long(w.batch) * d.heads * tokens;
  const long rows =
      std::min<long>(tokens, std::max<long>(1, kScoreBudget / per_row));
  terms.push_back(term(
      "attention", 2 * e * double(per_row) * double(rows),
      fmt::format("scores and softmax of {} query rows x {} keys x {} heads "
                  "x 2 x {} B x batch {}",
                  rows, tokens, d.heads, e, w.batch)));
  return finish(w, std::move(terms));
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
