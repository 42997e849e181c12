#pragma once
// The Z-Image transformer (diffusers' ZImageTransformer2DModel, the S3-DiT of
// Z-Image-Turbo) in its basic, text-to-image mode: image tokens and caption
// tokens are refined apart (noise refiner with the timestep's modulation,
// context refiner without), then run as one sequence [image, caption] through
// the main layers; 3-axis RoPE over (frame/caption index, row, column).

#include <cstdint>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/config/json_config.hpp>
#include <mold/model/denoiser.hpp>
#include <string>
#include <utility>
#include <vector>

#include "zimage_transformer_config.hpp"

namespace zimage {

class ZImageTransformer final : public mold::Denoiser {
 public:
  /// Declares the parameters (shapes only) under the diffusers checkpoint's
  /// names: `all_x_embedder.2-1.weight`, `noise_refiner.0.attention.to_q.
  /// weight`, `layers.29.adaLN_modulation.0.bias`, `x_pad_token`, ...
  ZImageTransformer(const ZImageTransformerConfig& config, std::string arch);

  std::string describe() const override;
  /// ZImageTransformer2DModel.forward(x, t, cap_feats) in basic mode with
  /// patch_size 2, f_patch_size 1, batched: item i's latent is latents[i] as
  /// a one-frame (C, 1, H, W) image, its caption the rows of text[i] where
  /// text_mask[i] is true (the pipeline's prompt_embeds[i][prompt_masks[i]]),
  /// its timestep timestep[i] (the pipeline's (1000 - t) / 1000; the model
  /// scales it by t_scale). Returns the model's raw output (B, C, H, W) in
  /// the parameters' dtype (the pipeline negates it). Inputs are converted to
  /// the parameters' device and dtype. InvalidArgument naming the field for
  /// shapes it cannot take: H or W not a multiple of 2, a caption with no
  /// valid token, positions beyond axes_lens.
  at::Tensor forward(const mold::DenoiserInput& input) const override;
  int64_t in_channels() const override { return config_.in_channels; }
  int64_t latent_multiple() const override { return 2; }
  int64_t text_dim() const override { return config_.cap_feat_dim; }
  const ZImageTransformerConfig& config() const { return config_; }

 private:
  struct Rope;  // cos and sin per token, (B, S, head_dim / 2), float32

  void declare_block(const std::string& prefix, bool modulation);
  at::Tensor linear(const at::Tensor& x, const std::string& prefix,
                    bool bias) const;
  at::Tensor rms_norm(const at::Tensor& x, const std::string& weight,
                      double eps) const;
  at::Tensor attention(const at::Tensor& x, const std::string& prefix,
                       const Rope& rope, const at::Tensor& key_mask) const;
  at::Tensor block(at::Tensor x, const std::string& prefix, const Rope& rope,
                   const at::Tensor& key_mask, const at::Tensor& adaln) const;
  at::Tensor timestep_embedding(const at::Tensor& t) const;
  Rope rope(const at::Tensor& positions) const;
  void check_input(const mold::DenoiserInput& input) const;

  ZImageTransformerConfig config_;
  std::string arch_;
};

/// The registry's denoiser factory: "default" (Z-Image-Turbo), "tiny", or a
/// diffusers config.json. Parameters declared only; the caller seeds or loads
/// them. InvalidArgument for an unknown built-in name.
std::unique_ptr<mold::Denoiser> make_zimage_transformer(
    const mold::ArchSpec& arch);

}  // namespace zimage
