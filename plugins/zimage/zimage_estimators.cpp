#include "zimage_estimators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/attention_chunk.hpp>

#include "qwen3_config.hpp"
#include "zimage_transformer_config.hpp"

namespace zimage {

namespace {

constexpr long kSeqMultiple = 32;  // the transformer pads each sequence
constexpr double kFloat32 = 4;

long round_up(long value, long multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void require_built_in(const std::string& arch, const char* op) {
  if (arch != mold::archs::kDefault && arch != mold::archs::kTiny)
    throw mold::InvalidArgument(fmt::format(
        "no zimage {} estimate for architecture '{}': only 'default' and "
        "'tiny'",
        op, arch));
}

}  // namespace

TextEncoderDims text_encoder_dims(const Qwen3Config& c) {
  TextEncoderDims d;
  d.hidden = long(c.hidden_size);
  d.heads = long(c.num_attention_heads);
  d.kv_heads = long(c.num_key_value_heads);
  d.head_dim = long(c.head_dim);
  d.intermediate = long(c.intermediate_size);
  d.query_norm = true;  // q_norm and k_norm
  d.rotary = mold::RotaryTables::shared_with_float32_angles;
  return d;
}

TransformerDims transformer_dims(const ZImageTransformerConfig& c) {
  return {long(c.dim),       long(c.n_heads),     long(c.head_dim()),
          long(c.ffn_dim()), long(c.adaln_dim()), long(c.cap_feat_dim)};
}

TextEncoderDims text_encoder_dims(const std::string& arch) {
  require_built_in(arch, "text_encode");
  return text_encoder_dims(arch == mold::archs::kTiny
                               ? Qwen3Config::tiny_config()
                               : Qwen3Config::default_config());
}

TransformerDims transformer_dims(const std::string& arch) {
  require_built_in(arch, "denoise");
  return transformer_dims(arch == mold::archs::kTiny
                              ? ZImageTransformerConfig::tiny_config()
                              : ZImageTransformerConfig::default_config());
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
  const mold::AttentionChunk chunk =
      mold::attention_chunk(w.batch, d.heads, tokens);
  const double b = double(w.batch);
  const double e = double(mold::dtype_size(w.dtype));
  const double n = double(tokens);
  const double row = b * n * double(d.dim) * e;
  const double float32_row = b * n * double(d.dim) * kFloat32;
  const double copy = e == kFloat32 ? 0 : float32_row;
  const double resident =
      row + b * n * (double(d.head_dim) * kFloat32 + 2 * 3 * 8);
  const double rotary = resident + 3 * row + 4 * float32_row + copy;
  const double attention = resident + 5 * row + 2 * chunk.scores() * e;
  const double feed_forward = resident + row + 2 * b * n * double(d.ffn) * e;
  mold::SequenceShape s;
  s.add_stage(
      "rotary", rotary,
      fmt::format("{} tokens ({} image + {} caption, each padded to {}) "
                  "x batch {}, dim {}, rotated in float32, {:g} B",
                  tokens, image_tokens, w.tokens, kSeqMultiple, w.batch, d.dim,
                  e));
  s.add_stage("attention", attention,
              fmt::format("{}, dim {}, {:g} B", chunk.describe(), d.dim, e));
  s.add_stage("feed_forward", feed_forward,
              fmt::format("{} tokens x batch {} x (2 x dim {} + 2 x ffn {}) x "
                          "{:g} B",
                          tokens, w.batch, d.dim, d.ffn, e));
  const double dim = double(d.dim);
  const double ffn = double(d.ffn);
  // The threads' scratch of each stage's products, beside at most the
  // stage's peak: q, k, v and the output projection (beside less than the
  // rotation), a chunk's two score products, w1, w3 and w2.
  const double head_dim = double(d.head_dim);
  const double keys = double(chunk.keys);
  s.count_thread_scratch(w, "rotary", b * n, {{dim, dim}});
  s.count_thread_scratch(w, "attention", double(chunk.rows),
                         {{head_dim, keys}, {keys, head_dim}});
  s.count_thread_scratch(w, "feed_forward", b * n, {{dim, ffn}, {ffn, dim}});
  // Beside no more than what stays alive through the layers: the timestep's
  // MLP and the modulations, one row per image (1024 wide inside the MLP:
  // at the tiny width its scratch is the op's largest), and the embedders
  // of the caption and the patches.
  const double adaln = double(d.adaln);
  s.count_thread_scratch(
      w, "rotary", b,
      {{double(ZImageTransformerConfig::timestep_frequency_dim),
        double(ZImageTransformerConfig::timestep_hidden)},
       {double(ZImageTransformerConfig::timestep_hidden), adaln},
       {adaln, 4 * dim}},
      resident, "the timestep's MLP and the modulations");
  s.count_thread_scratch(
      w, "rotary", b * double(round_up(std::max(w.tokens, 1), kSeqMultiple)),
      {{double(d.cap_feat), dim}}, resident, "cap_embedder");
  // The largest matrix the evaluation dequantizes: the feed-forward's (w1
  // and w3, ffn by dim) at the published widths. The timestep's MLP and the
  // modulations take a row per image (multiplied from their blocks on the
  // cpu); at the tiny width t_embedder's first (1024 by 256) is the largest
  // on another backend.
  const double mid = double(ZImageTransformerConfig::timestep_hidden);
  const double caption =
      b * double(round_up(std::max(w.tokens, 1), kSeqMultiple));
  s.count_weight_scratch(
      w, {{ffn, dim, b * n, "feed_forward.w1 / w3"},
          {dim, dim, b * n, "attention.to_q / to_k / to_v / to_out"},
          {4 * dim, adaln, b, "adaLN_modulation"},
          {mid, double(ZImageTransformerConfig::timestep_frequency_dim), b,
           "t_embedder.mlp.0"},
          {adaln, mid, b, "t_embedder.mlp.2"},
          {dim, double(d.cap_feat), caption, "cap_embedder.1"}});
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
      .estimate(w, mold::decoder_text_encode_shape(w, d));
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
