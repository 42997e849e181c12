#pragma once
/// Denoisers: the diffusion transformer that predicts, from a noisy latent, a
/// timestep and the text's hidden states, what a sampler steps along.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mold/model/module.hpp"

namespace mold {

struct DenoiserInput {
  at::Tensor latents;    ///< (B, C, H, W) in the pipeline's latent space
  at::Tensor timestep;   ///< (B,) float, as the model's forward takes it
  at::Tensor text;       ///< (B, L, D): the text encoder's hidden states
  at::Tensor text_mask;  ///< (B, L) bool: which of the L tokens are real
  /// Edit models: the clean latents of the images an edit conditions on,
  /// each (B, C, h_j, w_j); their tokens join the noisy latent's and the
  /// output covers the noisy latent only. Empty for text-to-image.
  std::vector<at::Tensor> references{};
};

class Denoiser : public Module {
 public:
  /// The model's raw output for `input`, shaped like input.latents (any sign
  /// or time convention is the pipeline's to apply). Throws InvalidArgument
  /// naming the field for shapes the architecture cannot take.
  virtual at::Tensor forward(const DenoiserInput& input) const = 0;
  virtual int64_t in_channels() const = 0;
  /// H and W of the latent must be multiples of this (the patch size).
  virtual int64_t latent_multiple() const = 0;
  /// The text hidden size it takes (D).
  virtual int64_t text_dim() const = 0;
  /// A denoiser reads every matrix through weight(): quantized files' (GGUF,
  /// fp8) matrices stay quantized on the device.
  bool reads_quantized_weights() const override { return true; }

 protected:
  /// "[1, 16, 64, 64] Float", or "an undefined tensor".
  static std::string shape_of(const at::Tensor& t);
  /// Throws InvalidArgument "<who>: <field> is <its shape and dtype>;
  /// expected <expected>".
  [[noreturn]] static void refuse_input(const std::string& who,
                                        const std::string& field,
                                        const at::Tensor& t,
                                        const std::string& expected);
  /// The conditioning of an input whose latents are `batch` deep: timestep
  /// (B,) real, text (B, L, text_dim()) floating point with L >= 1,
  /// text_mask (B, L) bool or integer. Refuses the first that is not.
  void check_conditioning(const std::string& who, const DenoiserInput& input,
                          int64_t batch) const;
};

}  // namespace mold
