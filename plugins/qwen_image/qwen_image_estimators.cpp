#include "qwen_image_estimators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>

#include "qwen25vl_config.hpp"
#include "qwen_image_transformer_config.hpp"

namespace qwen_image {

namespace {

constexpr long kScoreBudget = 1L << 25;  // the transformer's attention chunk
constexpr long kImagePatch = 16;         // pixels per transformer token side
// The encoders' softmax runs in float32 whatever the dtype, and the scores,
// the float32 probabilities and their cast back live at once: counted as
// 4-byte elements in every dtype.
constexpr double kFloat32Scores = 4;

void require_builtin(const std::string& arch, const char* op) {
  if (arch != "default" && arch != "tiny")
    throw mold::InvalidArgument(fmt::format(
        "no qwen_image {} estimate for architecture '{}': only 'default' and "
        "'tiny'",
        op, arch));
}

Qwen25VLConfig encoder_config(const std::string& arch) {
  return arch == "tiny" ? Qwen25VLConfig::tiny_config()
                        : Qwen25VLConfig::default_config();
}

}  // namespace

TextEncoderDims text_encoder_dims(const Qwen25VLConfig& c) {
  return {long(c.hidden_size), long(c.num_attention_heads),
          long(c.intermediate_size)};
}

VisionDims vision_dims(const Qwen25VLVisionConfig& v) {
  return {long(v.hidden_size), long(v.num_heads),
          long(v.patch_size),  long(v.spatial_merge_size),
          long(v.window_size), long(v.intermediate_size)};
}

TransformerDims transformer_dims(const QwenImageTransformerConfig& c) {
  return {long(c.inner_dim()), long(c.num_attention_heads)};
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
  return transformer_dims(arch == "tiny"
                              ? QwenImageTransformerConfig::tiny_config()
                              : QwenImageTransformerConfig::default_config());
}

mold::SequenceShape text_encode_shape(const mold::Workload& w,
                                      const TextEncoderDims& d) {
  const double n = double(std::max(w.tokens, 1));
  mold::SequenceShape s;
  s.tokens = n;
  s.width = double(d.hidden);
  s.element = double(mold::dtype_size(w.dtype));
  s.scores = n * n * double(d.heads);
  s.score_element = kFloat32Scores;
  s.tokens_detail = fmt::format("{} tokens", w.tokens);
  s.scores_detail = fmt::format(
      "{0}^2 token pairs x {1} heads (float32 softmax)", w.tokens, d.heads);
  // The projections are at most hidden wide on either side (grouped k and v
  // narrower), the feed-forward intermediate.
  const double hidden = double(d.hidden), ffn = double(d.intermediate);
  s.count_thread_scratch(w, n,
                         {{hidden, hidden}, {hidden, ffn}, {ffn, hidden}});
  return s;
}

mold::SequenceShape vision_encode_shape(const mold::Workload& w,
                                        const VisionDims& d) {
  double patches = 0, largest = 0;
  for (const mold::ImageSize& image : w.images) {
    const double n =
        double(image.height / d.patch) * double(image.width / d.patch);
    patches += n;
    largest = std::max(largest, n);
  }
  // The full-attention blocks attend over a whole image; the window blocks
  // over at most a window of it.
  const double segment = largest;
  mold::SequenceShape s;
  s.tokens = std::max(patches, 1.0);
  s.width = double(d.hidden);
  s.element = double(mold::dtype_size(w.dtype));
  s.scores = segment * segment * double(d.heads);
  s.score_element = kFloat32Scores;
  s.tokens_detail =
      fmt::format("{} patches of {} image{}", patches, w.images.size(),
                  w.images.size() == 1 ? "" : "s");
  s.scores_detail = fmt::format(
      "{0}^2 patch pairs of the largest image x {1} heads (float32 softmax)",
      segment, d.heads);
  const double hidden = double(d.hidden), ffn = double(d.intermediate);
  s.count_thread_scratch(w, s.tokens,
                         {{hidden, 3 * hidden}, {hidden, ffn}, {ffn, hidden}});
  return s;
}

mold::SequenceShape denoise_shape(const mold::Workload& w,
                                  const TransformerDims& d) {
  long image_tokens =
      long(w.height / kImagePatch) * long(w.width / kImagePatch);
  long source_tokens = 0;
  for (const mold::ImageSize& image : w.images)
    source_tokens +=
        long(image.height / kImagePatch) * long(image.width / kImagePatch);
  const long tokens = image_tokens + source_tokens + std::max(w.tokens, 1);
  const long per_row = long(d.heads) * tokens;
  const long rows =
      std::min<long>(tokens, std::max<long>(1, kScoreBudget / per_row));
  mold::SequenceShape s;
  s.tokens = double(tokens);
  s.width = double(d.dim);
  s.element = double(mold::dtype_size(w.dtype));
  s.scores = double(rows) * double(tokens) * double(d.heads);
  s.score_element = s.element;
  s.tokens_detail =
      source_tokens ? fmt::format(
                          "{} tokens ({} image + {} of the source images + {} "
                          "text)",
                          tokens, image_tokens, source_tokens, w.tokens)
                    : fmt::format("{} tokens ({} image + {} text)", tokens,
                                  image_tokens, w.tokens);
  s.scores_detail =
      fmt::format("{} query rows x {} keys x {} heads", rows, tokens, d.heads);
  const double dim = double(d.dim);
  s.count_thread_scratch(w, double(tokens),
                         {{dim, dim}, {dim, 4 * dim}, {4 * dim, dim}});
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
      .estimate(w, text_encode_shape(w, d));
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
