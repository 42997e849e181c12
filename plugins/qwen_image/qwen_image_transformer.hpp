#pragma once
// The Qwen-Image transformer (diffusers' QwenImageTransformer2DModel), the
// 20B MMDiT of Qwen-Image and Qwen-Image-Edit: dual-stream blocks (one set of
// weights for the text tokens, one for the image tokens, each modulated by
// the timestep), joint attention over [text, image] with per-head RMSNorm and
// a 3-axis RoPE (frame = image index, centred rows and columns), 2x2 patches
// of the 16-channel latent.

#include <cstdint>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/config/json_config.hpp>
#include <mold/model/denoiser.hpp>
#include <string>
#include <vector>

#include "qwen_image_transformer_config.hpp"

namespace qwen_image {

class QwenImageTransformer final : public mold::Denoiser {
 public:
  /// Declares the parameters (shapes only) under the diffusers checkpoint's
  /// names: `img_in.weight`, `transformer_blocks.0.attn.add_q_proj.weight`,
  /// `transformer_blocks.59.img_mlp.net.0.proj.weight`, `norm_out.linear.
  /// bias`, ...
  QwenImageTransformer(const QwenImageTransformerConfig& config,
                       std::string arch);

  std::string describe() const override;
  /// What a single file's __index_timestep_zero__ marker says when no
  /// config.json does (Qwen-Image-Edit-2511's zero_cond_t: no parameter
  /// changes, only the edit images' timestep).
  void set_zero_cond_t(bool on) { config_.zero_cond_t = on; }
  /// QwenImageTransformer2DModel.forward as the Qwen-Image pipelines call it:
  /// item i's noisy latent is latents[i] (16, H, W), packed into 2x2 patches;
  /// each of input.references (B, 16, h_j, w_j) is an edit image's clean
  /// latent whose tokens follow (img_shapes [(1, H/2, W/2), (1, h_j/2,
  /// w_j/2), ...]); the text is text[i] with text_mask[i] the valid tokens
  /// (the encoder_hidden_states_mask: padded keys are never attended to);
  /// timestep[i] is sigma in [0, 1] (the pipeline's t / 1000). Returns the
  /// prediction for the noisy latent only, (B, 16, H, W), in the parameters'
  /// dtype. Inputs are converted to the parameters' device and dtype.
  /// InvalidArgument naming the field for shapes it cannot take.
  at::Tensor forward(const mold::DenoiserInput& input) const override;
  int64_t in_channels() const override { return config_.out_channels; }
  int64_t latent_multiple() const override { return config_.patch_size; }
  int64_t text_dim() const override { return config_.joint_attention_dim; }
  const QwenImageTransformerConfig& config() const { return config_; }

 private:
  struct Rope;        // per-token rotations of the text and the image tokens
  struct Modulation;  // the timestep embedding(s) a block's stream uses

  void declare_block(const std::string& prefix);
  at::Tensor linear(const at::Tensor& x, const std::string& prefix) const;
  at::Tensor rms_norm(const at::Tensor& x, const std::string& weight) const;
  at::Tensor timestep_embedding(const at::Tensor& t) const;
  Rope rope(const std::vector<std::pair<int64_t, int64_t>>& grids,
            int64_t text_len) const;
  /// One block; returns nothing, updates `img` and `txt` in place.
  void block(at::Tensor& img, at::Tensor& txt, const std::string& prefix,
             const Rope& rope, const at::Tensor& key_mask,
             const Modulation& modulation) const;
  at::Tensor attention(const at::Tensor& img, const at::Tensor& txt,
                       const std::string& prefix, const Rope& rope,
                       const at::Tensor& key_mask, at::Tensor& txt_out) const;
  void check_input(const mold::DenoiserInput& input) const;

  QwenImageTransformerConfig config_;
  std::string arch_;
};

/// (B, C, H, W) -> (B, (H/2)(W/2), 4C): 2x2 patches, channels outermost
/// within a token (the pipeline's _pack_latents): the transformer's tokens, and
/// the 4C features over which true CFG takes its norms.
at::Tensor pack_latents(const at::Tensor& latents);
/// The inverse of pack_latents: (B, (H/2)(W/2), 4C) -> (B, C, H, W).
at::Tensor unpack_latents(const at::Tensor& tokens, int64_t height,
                          int64_t width);

/// The registry's denoiser factory: "default" (Qwen-Image), "tiny", or a
/// diffusers config.json. Parameters declared only; the caller seeds or
/// loads them. InvalidArgument for an unknown built-in name.
std::unique_ptr<mold::Denoiser> make_qwen_image_transformer(
    const mold::ArchSpec& arch);

}  // namespace qwen_image
