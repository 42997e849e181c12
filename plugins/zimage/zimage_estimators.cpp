#include "zimage_estimators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>

#include "qwen3_config.hpp"
#include "zimage_transformer_config.hpp"

namespace zimage {

namespace {

constexpr long kSeqMultiple = 32;        // the transformer pads each sequence
constexpr long kScoreBudget = 1L << 25;  // the transformer's attention chunk
constexpr double kFloat32 = 4;

long round_up(long value, long multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void require_built_in(const std::string& arch, const char* op) {
  if (arch != "default" && arch != "tiny")
    throw mold::InvalidArgument(fmt::format(
        "no zimage {} estimate for architecture '{}': only 'default' and "
        "'tiny'",
        op, arch));
}

std::string human(double bytes) {
  return mold::format_bytes(mold::Bytes(std::llround(bytes)));
}

}  // namespace

TextEncoderDims text_encoder_dims(const Qwen3Config& c) {
  return {long(c.hidden_size), long(c.num_attention_heads),
          long(c.num_key_value_heads), long(c.head_dim),
          long(c.intermediate_size)};
}

TransformerDims transformer_dims(const ZImageTransformerConfig& c) {
  return {long(c.dim), long(c.n_heads), long(c.head_dim()), long(c.ffn_dim())};
}

TextEncoderDims text_encoder_dims(const std::string& arch) {
  require_built_in(arch, "text_encode");
  return text_encoder_dims(arch == "tiny" ? Qwen3Config::tiny_config()
                                          : Qwen3Config::default_config());
}

TransformerDims transformer_dims(const std::string& arch) {
  require_built_in(arch, "denoise");
  return transformer_dims(arch == "tiny"
                              ? ZImageTransformerConfig::tiny_config()
                              : ZImageTransformerConfig::default_config());
}

// Qwen3TextEncoder::hidden_state, per layer, as a probe of the tracking
// allocator counts it. Alive through every layer: the hidden states x, the
// causal and padding masks (bool, tokens^2 each), the rotary tables
// (float32 frequencies and angles, cos and sin in the dtype). Three stages
// peak apart, each beside x and the normed input h:
//  - projection: q (heads x head_dim wide) and its per-head RMS norm, whose
//    float32 copy (none when the dtype is float32), product, cast and
//    scaled result are alive at once;
//  - attention: the scores, softmax(.., float32)'s float32 output and its
//    float32 copy of scores in another dtype, beside v;
//  - feed-forward: gate and up (ffn wide) beside x, the residual sum and h.
mold::SequenceShape text_encode_shape(const mold::Workload& w,
                                      const TextEncoderDims& d) {
  const double n = double(std::max(w.tokens, 1));
  const double b = double(w.batch);
  const double e = double(mold::dtype_size(w.dtype));
  const double copy = e == kFloat32 ? 0 : kFloat32;  // a float32 copy
  const double row = b * n * double(d.hidden) * e;   // one (B, n, hidden)
  const double q_elements = b * n * double(d.heads * d.head_dim);
  const double scores = b * double(d.heads) * n * n;
  const double resident =
      row + (1 + b) * n * n + n * double(d.head_dim) * (1.5 * kFloat32 + 2 * e);
  const double projection =
      resident + row + q_elements * (3 * e + kFloat32 + copy);
  const double attention = resident + row +
                           b * n * double(d.kv_heads * d.head_dim) * e +
                           scores * (e + kFloat32 + copy);
  const double feed_forward =
      resident + 2 * row + 2 * b * n * double(d.intermediate) * e;
  mold::SequenceShape s;
  s.stages.push_back(
      {"projection", projection,
       fmt::format("{}: {} tokens x batch {}, q of {} heads x {} with its "
                   "float32 RMS norm, hidden {}, {:g} B",
                   human(projection), w.tokens, w.batch, d.heads, d.head_dim,
                   d.hidden, e)});
  s.stages.push_back(
      {"attention", attention,
       fmt::format("{}: {}^2 token pairs x {} heads x batch {} scores at "
                   "{:g} B (float32 softmax), hidden {}",
                   human(attention), w.tokens, d.heads, w.batch,
                   e + kFloat32 + copy, d.hidden)});
  s.stages.push_back(
      {"feed_forward", feed_forward,
       fmt::format("{}: {} tokens x batch {} x (3 x hidden {} + 2 x ffn {}) "
                   "x {:g} B",
                   human(feed_forward), w.tokens, w.batch, d.hidden,
                   d.intermediate, e)});
  const double hidden = double(d.hidden);
  const double q_width = double(d.heads * d.head_dim);
  const double kv_width = double(d.kv_heads * d.head_dim);
  const double ffn = double(d.intermediate);
  s.count_thread_scratch(w, b * n,
                         {{hidden, q_width},
                          {hidden, kv_width},
                          {q_width, hidden},
                          {hidden, ffn},
                          {ffn, hidden}});
  return s;
}

// ZImageTransformer::block over the unified sequence (image + caption
// tokens, each padded to 32), which peaks above the refiners' shorter ones,
// as a probe of the tracking allocator counts it. Alive through every
// layer: x, the rotary tables (float32 cos and sin, head_dim / 2 each) and
// the int64 positions. Three stages peak apart:
//  - rotary: k's rotation (rotate_interleaved_pairs in float32: the float32
//    copy, none when the dtype is float32, the two rotated halves and their
//    stack) beside the normed input, q and k;
//  - attention: a chunk's scores and their softmax (in the dtype) beside
//    the normed input, q, k, v and the output, each as wide as x;
//  - feed-forward: w1's and w3's outputs (ffn wide) beside the normed input.
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
  const double b = double(w.batch);
  const double e = double(mold::dtype_size(w.dtype));
  const double n = double(tokens);
  const double row = b * n * double(d.dim) * e;
  const double float32_row = b * n * double(d.dim) * kFloat32;
  const double copy = e == kFloat32 ? 0 : float32_row;
  const double resident =
      row + b * n * (double(d.head_dim) * kFloat32 + 2 * 3 * 8);
  const double chunk = double(rows) * double(per_row);
  const double rotary = resident + 3 * row + 4 * float32_row + copy;
  const double attention = resident + 5 * row + 2 * chunk * e;
  const double feed_forward = resident + row + 2 * b * n * double(d.ffn) * e;
  mold::SequenceShape s;
  s.stages.push_back(
      {"rotary", rotary,
       fmt::format("{}: {} tokens ({} image + {} caption, each padded to {}) "
                   "x batch {}, dim {}, rotated in float32, {:g} B",
                   human(rotary), tokens, image_tokens, w.tokens, kSeqMultiple,
                   w.batch, d.dim, e)});
  s.stages.push_back(
      {"attention", attention,
       fmt::format("{}: {} query rows x {} keys x {} heads x batch {} "
                   "scores, dim {}, {:g} B",
                   human(attention), rows, tokens, d.heads, w.batch, d.dim,
                   e)});
  s.stages.push_back(
      {"feed_forward", feed_forward,
       fmt::format("{}: {} tokens x batch {} x (2 x dim {} + 2 x ffn {}) x "
                   "{:g} B",
                   human(feed_forward), tokens, w.batch, d.dim, d.ffn, e)});
  const double dim = double(d.dim);
  const double ffn = double(d.ffn);
  s.count_thread_scratch(w, b * n, {{dim, dim}, {dim, ffn}, {ffn, dim}});
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
