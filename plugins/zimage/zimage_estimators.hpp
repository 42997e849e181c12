#pragma once
// Working-memory estimators of Z-Image's text encoder (Qwen3) and denoiser
// (S3-DiT): the activations that live at once (linear in the tokens) and the
// attention's scores (per token pair: mold runs math attention, O(tokens^2);
// the transformer's in chunks of query rows). The constants are the
// [text_encode.*] and [denoise.*] tables of zimage.calibration.toml, measured
// by `molddiag calibrate`; this file says what an architecture's workload
// makes of them (its tokens, width, scores). Weights are not working memory:
// the model cache counts them as the component's bytes.

#include <filesystem>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/estimate.hpp>
#include <mold/estimate/sequence_model.hpp>
#include <mold/estimate/sequence_tables.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registrar.hpp>
#include <string>
#include <vector>

namespace zimage {

/// The sizes that decide the working memory.
struct TextEncoderDims {
  long hidden = 0, heads = 0;
};
struct TransformerDims {
  long dim = 0, heads = 0;
};

/// The published architecture's and the tiny one's ("default", "tiny");
/// InvalidArgument for another.
TextEncoderDims text_encoder_dims(const std::string& arch);
TransformerDims transformer_dims(const std::string& arch);

/// text_encode of workload.tokens real tokens (the pipeline encodes no
/// padding): every position's activations, and the scores of all token
/// pairs and heads with their float32 softmax.
mold::SequenceShape text_encode_shape(const mold::Workload& workload,
                                      const TextEncoderDims& dims);
/// One denoiser evaluation over the image's tokens and workload.tokens
/// caption tokens, each padded to 32 (batch 2 with classifier-free
/// guidance), attention in chunks of query rows of at most 2^25 scores.
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
