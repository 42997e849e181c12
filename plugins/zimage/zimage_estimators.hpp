#pragma once
// Working-memory estimators of Z-Image's text encoder (Qwen3) and denoiser
// (S3-DiT). Each op's layer has two stages that peak apart: attention (the
// scores of every token pair and head: mold runs math attention, O(tokens^2);
// the transformer's in chunks of query rows) and the feed-forward (the two
// SwiGLU projections, ffn wide). This file counts the bytes each stage of
// qwen3_text_encoder.cpp and zimage_transformer.cpp holds at once, from the
// architecture's widths and the dtypes the code computes in (float32
// softmax, float32 rotary tables; the text encoder's layer is the library's
// decoder_text_encode_shape); the [text_encode.*] and [denoise.*]
// tables of zimage.calibration.toml hold the measured factor per stage
// (`molddiag calibrate`), so one table serves every architecture and dtype.
// Weights are not working memory: the model cache counts them as the
// component's bytes.

#include <filesystem>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/decoder_stages.hpp>
#include <mold/estimate/estimate.hpp>
#include <mold/estimate/sequence_model.hpp>
#include <mold/estimate/sequence_tables.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registrar.hpp>
#include <string>
#include <vector>

namespace zimage {

struct Qwen3Config;
struct ZImageTransformerConfig;

/// The sizes that decide the working memory.
/// Qwen3: q and k normed per head, one float32 rotary table for the batch.
using TextEncoderDims = mold::DecoderDims;
struct TransformerDims {
  long dim = 0, heads = 0, head_dim = 0, ffn = 0;
  long adaln = 0;     ///< the timestep embedding's width
  long cap_feat = 0;  ///< the caption features' width, cap_embedder's input
};

/// The published architecture's and the tiny one's ("default", "tiny");
/// InvalidArgument for another.
TextEncoderDims text_encoder_dims(const std::string& arch);
TransformerDims transformer_dims(const std::string& arch);

/// The dims of a built text encoder's or transformer's config.
TextEncoderDims text_encoder_dims(const Qwen3Config& config);
TransformerDims transformer_dims(const ZImageTransformerConfig& config);

/// One denoiser evaluation over the image's tokens and workload.tokens
/// caption tokens, each padded to 32 (batch 2 with classifier-free
/// guidance): the attention stage (in chunks of query rows of at most 2^25
/// scores) and the feed-forward stage.
mold::SequenceShape denoise_shape(const mold::Workload& workload,
                                  const TransformerDims& dims);

/// The tables of zimage.calibration.toml for both ops.
class ZImageEstimators {
 public:
  /// Throws ConfigError naming `path` when the file lacks [text_encode.cpu]
  /// or [denoise.cpu] (the fallback for backends not measured).
  ZImageEstimators(const mold::CalibrationFile& file,
                   const std::filesystem::path& path);

  mold::Estimate text_encode(const mold::Workload& workload,
                             const TextEncoderDims& dims) const;
  mold::Estimate denoise(const mold::Workload& workload,
                         const TransformerDims& dims) const;

 private:
  mold::SequenceTables tables_;
};

/// Registers (zimage, text_encode, *) and (zimage, denoise, *) for the
/// built-in architectures.
void register_transformer_estimators(mold::Registrar& registrar,
                                     const ZImageEstimators& estimators);

}  // namespace zimage
