#pragma once
// Working-memory estimators of Z-Image's text encoder (Qwen3) and denoiser
// (S3-DiT), from the architecture's sizes: the activations that live at once
// (linear in the tokens) and the attention's scores (per token pair: mold
// runs math attention, O(tokens^2); the transformer's in chunks of query
// rows). The constants were fitted on measurements (zimage_estimators.cpp).
// Weights are not working memory: the model cache counts them as the
// component's bytes.

#include <mold/estimate/estimate.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registrar.hpp>

namespace zimage {

/// The sizes that decide the working memory.
struct TextEncoderDims {
  long hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0;
};
struct TransformerDims {
  long dim = 0, heads = 0;
};

/// The published architecture's and the tiny one's ("default", "tiny");
/// InvalidArgument for another.
TextEncoderDims text_encoder_dims(const std::string& arch);
TransformerDims transformer_dims(const std::string& arch);

/// text_encode of workload.tokens tokens (batch prompts).
mold::Estimate estimate_text_encode(const mold::Workload& workload,
                                    const TextEncoderDims& dims);
/// One denoiser evaluation over the image's tokens and workload.tokens
/// caption tokens (batch 2 with classifier-free guidance).
mold::Estimate estimate_denoise(const mold::Workload& workload,
                                const TransformerDims& dims);

/// Registers both for every backend: (zimage, text_encode, *) and (zimage,
/// denoise, *), for the built-in architectures.
void register_transformer_estimators(mold::Registrar& registrar);

}  // namespace zimage
