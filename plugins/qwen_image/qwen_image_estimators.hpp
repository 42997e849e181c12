#pragma once
// Working-memory estimators of Qwen-Image's text encoder (the Qwen2.5-VL
// language model), its vision tower (an edit's source images) and its
// denoiser (the MMDiT): the bytes each stage of a layer holds at once,
// counted from the architecture's widths and the dtypes the code computes in
// (the text encoder's layer by the library's decoder_text_encode_shape, the
// tower's and the transformer's blocks here). The [text_encode.*],
// [vision_encode.*] and [denoise.*] tables of qwen_image.calibration.toml
// hold the measured factor per stage (`molddiag calibrate`), so one table
// serves every architecture and dtype. Weights are not working
// memory: the model cache counts them as the component's bytes.

#include <filesystem>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/decoder_stages.hpp>
#include <mold/estimate/estimate.hpp>
#include <mold/estimate/sequence_model.hpp>
#include <mold/estimate/sequence_tables.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registrar.hpp>
#include <string>
#include <string_view>

namespace qwen_image {

/// The vision tower's phase: the edit images' patches through the tower,
/// before the prompt is encoded.
inline constexpr std::string_view kVisionEncode = "vision_encode";

/// The sizes that decide the working memory.
struct Qwen25VLConfig;
struct Qwen25VLVisionConfig;
struct QwenImageTransformerConfig;

/// The language model: no per-head q or k norm, multimodal rotary tables per
/// batch item.
using TextEncoderDims = mold::DecoderDims;
struct VisionDims {
  long hidden = 0, heads = 0, patch = 14, merge = 2, window = 112,
       intermediate = 0;
  long patch_values = 1176;  ///< channels x frames x patch x patch
};
struct TransformerDims {
  long dim = 0, heads = 0;  ///< the feed-forward is 4 x dim wide
  long joint = 0;           ///< the text encoder's width, txt_in's input
};

/// The widths of a configured architecture.
TextEncoderDims text_encoder_dims(const Qwen25VLConfig& config);
VisionDims vision_dims(const Qwen25VLVisionConfig& config);
TransformerDims transformer_dims(const QwenImageTransformerConfig& config);

/// The published architecture's and the tiny one's ("default", "tiny");
/// InvalidArgument for another.
TextEncoderDims text_encoder_dims(const std::string& arch);
VisionDims vision_dims(const std::string& arch);
TransformerDims transformer_dims(const std::string& arch);

/// text_encode of workload.tokens tokens (the template, the prompt and any
/// image tokens; batch 1, no padding) is the library's
/// decoder_text_encode_shape.
/// The tower over the patches of workload.images (each at the processor's
/// size: 14-pixel patches): the patch embedding, k's float32 rotation, the
/// scores of the largest attention segment (a whole image in the
/// full-attention blocks) with their float32 softmax, and the feed-forward.
mold::SequenceShape vision_encode_shape(const mold::Workload& workload,
                                        const VisionDims& dims);
/// One denoiser evaluation: the text's workload.tokens, the output's image
/// tokens (16-pixel patches) and each source image's (workload.images at the
/// VAE's size); attention in chunks of query rows of at most 2^25 scores.
/// Classifier-free guidance runs its two passes one after the other.
mold::SequenceShape denoise_shape(const mold::Workload& workload,
                                  const TransformerDims& dims);

/// The tables of qwen_image.calibration.toml for the three ops.
class QwenImageEstimators {
 public:
  /// Throws ConfigError naming `path` when the file lacks a cpu table of
  /// one of the ops (the fallback for backends not measured).
  QwenImageEstimators(const mold::CalibrationFile& file,
                      const std::filesystem::path& path);

  mold::Estimate text_encode(const mold::Workload& workload,
                             const TextEncoderDims& dims) const;
  mold::Estimate vision_encode(const mold::Workload& workload,
                               const VisionDims& dims) const;
  mold::Estimate denoise(const mold::Workload& workload,
                         const TransformerDims& dims) const;

 private:
  mold::SequenceTables tables_;
};

/// Registers (qwen_image, text_encode | vision_encode | denoise, *) for the
/// built-in architectures.
void register_sequence_estimators(mold::Registrar& registrar,
                                  const QwenImageEstimators& estimators);

}  // namespace qwen_image
