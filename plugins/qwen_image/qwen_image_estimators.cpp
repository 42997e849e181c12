#include "qwen_image_estimators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/attention_chunk.hpp>

#include "qwen25vl_config.hpp"
#include "qwen_image_transformer_config.hpp"

namespace qwen_image {

namespace {

constexpr long kImagePatch = 16;  // pixels per transformer token side
constexpr double kFloat32 = 4;

void require_builtin(const std::string& arch, const char* op) {
  if (arch != mold::archs::kDefault && arch != mold::archs::kTiny)
    throw mold::InvalidArgument(fmt::format(
        "no qwen_image {} estimate for architecture '{}': only 'default' and "
        "'tiny'",
        op, arch));
}

Qwen25VLConfig encoder_config(const std::string& arch) {
  return arch == mold::archs::kTiny ? Qwen25VLConfig::tiny_config()
                                    : Qwen25VLConfig::default_config();
}

}  // namespace

TextEncoderDims text_encoder_dims(const Qwen25VLConfig& c) {
  TextEncoderDims d;
  d.hidden = long(c.hidden_size);
  d.heads = long(c.num_attention_heads);
  d.kv_heads = long(c.num_key_value_heads);
  d.head_dim = long(c.head_dim());
  d.intermediate = long(c.intermediate_size);
  d.query_norm = false;
  d.rotary = mold::RotaryTables::per_item;
  return d;
}

VisionDims vision_dims(const Qwen25VLVisionConfig& v) {
  return {long(v.hidden_size),   long(v.num_heads),
          long(v.patch_size),    long(v.spatial_merge_size),
          long(v.window_size),   long(v.intermediate_size),
          long(v.patch_values())};
}

TransformerDims transformer_dims(const QwenImageTransformerConfig& c) {
  return {long(c.inner_dim()), long(c.num_attention_heads),
          long(c.joint_attention_dim)};
}

TextEncoderDims text_encoder_dims(const std::string& arch) {
  require_builtin(arch, "text_encode");
  return text_encoder_dims(encoder_config(arch));
}

VisionDims vision_dims(const std::string& arch) {
  require_builtin(arch, "vision_encode");
  return vision_dims(encoder_config(arch).vision);
}

TransformerDims transformer_dims(const std::string& arch) {
  require_builtin(arch, "denoise");
  return transformer_dims(arch == mold::archs::kTiny
                              ? QwenImageTransformerConfig::tiny_config()
                              : QwenImageTransformerConfig::default_config());
}

// Qwen25VLTextEncoder::vision_block over every image's patches, as a probe
// of the tracking allocator counts it. Alive through every block: the
// patches' states, the block's output buffer (as wide) and the rotary
// tables (float32: the angles, head_dim / 2 wide, and cos and sin, head_dim
// each, per patch). Four stages peak apart:
//  - patch embedding: the images' pixel values cast to the dtype (none in
//    float32) and concatenated, beside their projection to the tower's
//    width (and in another dtype two copies of its weight);
//  - rotary: k's rotation in float32 (the float32 copy, none when the dtype
//    is float32, x cos, rotate_half, x sin, the sum) and its cast back,
//    beside the fused qkv projection (3 x hidden wide) and the rotated q;
//  - attention: the largest segment's scores (the whole largest image in
//    the full-attention blocks) with softmax(.., float32)'s float32 output
//    and its float32 copy of scores in another dtype, beside qkv and the
//    rotated q and k;
//  - feed-forward: gate (its projection and SiLU) and up, intermediate
//    wide, beside the attention's residual sum and its normed copy.
mold::SequenceShape vision_encode_shape(const mold::Workload& w,
                                        const VisionDims& d) {
  double patches = 0, largest = 0;
  for (const mold::ImageSize& image : w.images) {
    const double n =
        double(image.height / d.patch) * double(image.width / d.patch);
    patches += n;
    largest = std::max(largest, n);
  }
  patches = std::max(patches, 1.0);
  // The full-attention blocks attend over a whole image; the window blocks
  // over at most a window of it.
  const double segment = std::max(largest, 1.0);
  const double e = double(mold::dtype_size(w.dtype));
  const double copy = e == kFloat32 ? 0 : kFloat32;
  const double hidden = double(d.hidden), ffn = double(d.intermediate);
  const double head_dim = hidden / double(d.heads);
  const double row = patches * hidden * e;
  const double resident = 2 * row + patches * head_dim * 2.5 * kFloat32;
  const double scores = double(d.heads) * segment * segment;
  const double patch_values = patches * double(d.patch_values);
  // In another dtype than float32 the product also holds two copies of
  // the patch embedding's weight (measured on the tiny tower: its peak less
  // this count is constant in the images, two weights within one image's
  // states); float32 takes it as it is.
  const double weight = double(d.hidden) * double(d.patch_values) * e;
  const double patch_embed =
      e == kFloat32 ? patch_values * e + patches * hidden * e
                    : 2 * patch_values * e + patches * hidden * e + 2 * weight;
  const double rotary =
      resident + 5 * row + patches * hidden * (4 * kFloat32 + copy);
  // The scores, softmax's float32 output and, in another dtype, its float32
  // copy of the scores (above the cast back that follows).
  const double attention = resident + 5 * row + scores * (e + kFloat32 + copy);
  // The output buffer is freed before the feed-forward.
  const double feed_forward = resident + row + 2 * patches * ffn * e;
  const std::string what =
      fmt::format("{:g} patches of {} image{}", patches, w.images.size(),
                  w.images.size() == 1 ? "" : "s");
  mold::SequenceShape s;
  s.add_stage("patch_embed", patch_embed,
              fmt::format("{} x {} pixel values to hidden {}, {:g} B", what,
                          d.patch_values, d.hidden, e));
  s.add_stage("rotary", rotary,
              fmt::format("{}, hidden {}, k rotated in float32, {:g} B", what,
                          d.hidden, e));
  s.add_stage("attention", attention,
              fmt::format("{:g}^2 patch pairs of the largest image x {} heads "
                          "(float32 softmax), {}, hidden {}, {:g} B",
                          segment, d.heads, what, d.hidden, e));
  s.add_stage("feed_forward", feed_forward,
              fmt::format("{} x (3 x hidden {} + 2 x ffn {}) x {:g} B", what,
                          d.hidden, d.intermediate, e));
  // The threads' scratch of each stage's products, beside at most the
  // stage's peak: qkv and the output projection, the two score products of
  // the largest segment, the feed-forward's.
  s.count_thread_scratch(w, "rotary", patches,
                         {{hidden, 3 * hidden}, {hidden, hidden}});
  s.count_thread_scratch(w, "attention", segment,
                         {{head_dim, segment}, {segment, head_dim}});
  s.count_thread_scratch(w, "feed_forward", patches,
                         {{hidden, ffn}, {ffn, hidden}});
  return s;
}

// QwenImageTransformer::block over the joint sequence (the text's tokens,
// the noisy latent's and every source image's), as a probe of the tracking
// allocator counts it. Alive through every block: the image and text
// streams and the rotary tables (float32 cos and sin, head_dim / 2 wide,
// per token; counted at head_dim each, twice what they hold: 2 MiB of the
// published 4566-token edit's 475 MiB, inside the fitted factor). Each stage
// also holds what the statement that calls it keeps: the normed inputs and
// their modulated copies, each as wide as the streams. Three stages peak apart:
//  - rotary: the image tokens' k rotated (rotate_interleaved_pairs in
//    float32: the float32 copy, none when the dtype is float32, six
//    half-width products and sums and their stack) beside q, the text's k
//    and the normed k it rotates;
//  - attention: a chunk's scores and their softmax (in the dtype) beside
//    q, k, v and the output, each as wide as the streams;
//  - feed-forward: the image stream's first projection and its GELU (4 x
//    dim wide each, the statement keeps both) beside its normed, modulated
//    input and the projection back.
mold::SequenceShape denoise_shape(const mold::Workload& w,
                                  const TransformerDims& d) {
  const long image_tokens =
      long(w.height / kImagePatch) * long(w.width / kImagePatch);
  long source_tokens = 0;
  for (const mold::ImageSize& image : w.images)
    source_tokens +=
        long(image.height / kImagePatch) * long(image.width / kImagePatch);
  const long text_tokens = std::max(w.tokens, 1);
  const long tokens = image_tokens + source_tokens + text_tokens;
  const mold::AttentionChunk chunk =
      mold::attention_chunk(w.batch, d.heads, tokens);
  const double b = double(w.batch);
  const double e = double(mold::dtype_size(w.dtype));
  const double dim = double(d.dim), head_dim = dim / double(d.heads);
  const double n = double(tokens);
  const double n_image = double(image_tokens + source_tokens);
  const double row = b * n * dim * e;  // both streams, one (B, n, dim)
  const double copy = e == kFloat32 ? 0 : kFloat32;
  const double resident = row + n * head_dim * 2 * kFloat32;
  const double rotary =
      resident + 4 * row + b * n_image * dim * (4 * kFloat32 + copy);
  const double attention = resident + 6 * row + 2 * chunk.scores() * e;
  const double feed_forward =
      resident + 3 * b * n_image * dim * e + 2 * b * n_image * 4 * dim * e;
  mold::SequenceShape s;
  const std::string sequence =
      source_tokens ? fmt::format(
                          "{} tokens ({} image + {} of the source images + {} "
                          "text)",
                          tokens, image_tokens, source_tokens, w.tokens)
                    : fmt::format("{} tokens ({} image + {} text)", tokens,
                                  image_tokens, w.tokens);
  s.add_stage("rotary", rotary,
              fmt::format("{} x batch {}, dim {}, the image tokens' k rotated "
                          "in float32, {:g} B",
                          sequence, w.batch, d.dim, e));
  s.add_stage("attention", attention,
              fmt::format("{}, dim {}, {:g} B", chunk.describe(), d.dim, e));
  s.add_stage(
      "feed_forward", feed_forward,
      fmt::format("{:g} image tokens x batch {} x (3 x dim {} + 2 x ffn "
                  "{}) x {:g} B",
                  n_image, w.batch, d.dim, 4 * d.dim, e));
  // The threads' scratch of each stage's products, beside at most the
  // stage's peak: the projections, a chunk's two score products, the
  // feed-forward's.
  const double keys = double(chunk.keys);
  s.count_thread_scratch(w, "rotary", b * n, {{dim, dim}});
  s.count_thread_scratch(w, "attention", double(chunk.rows),
                         {{head_dim, keys}, {keys, head_dim}});
  s.count_thread_scratch(w, "feed_forward", b * n,
                         {{dim, 4 * dim}, {4 * dim, dim}});
  // Beside no more than what stays alive through the blocks: the timestep's
  // MLP and the modulations, a row per image (two with Edit-2511's clean
  // timestep: the same scratch), and the text's input projection.
  s.count_thread_scratch(
      w, "rotary", 2 * b,
      {{double(QwenImageTransformerConfig::timestep_frequency_dim), dim},
       {dim, dim},
       {dim, 6 * dim}},
      resident, "the timestep's MLP and the modulations");
  s.count_thread_scratch(w, "rotary", b * double(text_tokens),
                         {{double(d.joint), dim}}, resident, "txt_in");
  // The largest matrix dequantized: each block's modulation (6 x dim by
  // dim over a row per image: multiplied from its blocks on the cpu), the
  // image stream's feed-forward, or the text's input projection where the
  // text encoder is wider.
  s.count_weight_scratch(
      w, {{6 * dim, dim, b, "img_mod.1 / txt_mod.1"},
          {4 * dim, dim, b * n_image, "img_mlp"},
          {dim, double(d.joint), b * double(text_tokens), "txt_in"}});
  return s;
}

QwenImageEstimators::QwenImageEstimators(const mold::CalibrationFile& file,
                                         const std::filesystem::path& path)
    : tables_(file, path, "qwen_image",
              {std::string(mold::ops::kTextEncode), std::string(kVisionEncode),
               std::string(mold::ops::kDenoise)}) {}

mold::Estimate QwenImageEstimators::text_encode(
    const mold::Workload& w, const TextEncoderDims& d) const {
  return tables_.table(mold::ops::kTextEncode, w.backend)
      .estimate(w, mold::decoder_text_encode_shape(w, d));
}

mold::Estimate QwenImageEstimators::vision_encode(const mold::Workload& w,
                                                  const VisionDims& d) const {
  return tables_.table(kVisionEncode, w.backend)
      .estimate(w, vision_encode_shape(w, d));
}

mold::Estimate QwenImageEstimators::denoise(const mold::Workload& w,
                                            const TransformerDims& d) const {
  return tables_.table(mold::ops::kDenoise, w.backend)
      .estimate(w, denoise_shape(w, d));
}

void register_sequence_estimators(mold::Registrar& registrar,
                                  const QwenImageEstimators& estimators) {
  registrar.add_estimator(
      {"qwen_image", std::string(mold::ops::kTextEncode), "*"},
      [estimators](const mold::Workload& w) {
        return estimators.text_encode(w, text_encoder_dims(w.arch));
      });
  registrar.add_estimator({"qwen_image", std::string(kVisionEncode), "*"},
                          [estimators](const mold::Workload& w) {
                            return estimators.vision_encode(
                                w, vision_dims(w.arch));
                          });
  registrar.add_estimator({"qwen_image", std::string(mold::ops::kDenoise), "*"},
                          [estimators](const mold::Workload& w) {
                            return estimators.denoise(w,
                                                      transformer_dims(w.arch));
                          });
}

}  // namespace qwen_image
