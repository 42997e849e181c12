#pragma once
// The Qwen-Image transformer's architecture: the arguments of diffusers'
// QwenImageTransformer2DModel.__init__, built in or read from a config.json.
// Torch-free: estimates read it in processes that never load libtorch.

#include <cstdint>
#include <mold/config/json_config.hpp>
#include <vector>

namespace qwen_image {

/// The arguments of QwenImageTransformer2DModel.__init__ this model honours.
struct QwenImageTransformerConfig {
  int64_t patch_size = 2;
  int64_t in_channels = 64;   ///< patch_size^2 x out_channels (packed tokens)
  int64_t out_channels = 16;  ///< the latent's channels
  int64_t num_layers = 60;
  int64_t attention_head_dim = 128;
  int64_t num_attention_heads = 24;
  int64_t joint_attention_dim = 3584;  ///< the text encoder's hidden size
  std::vector<int64_t> axes_dims_rope{16, 56, 56};
  /// Qwen-Image-Edit-2511: the edit images' tokens are modulated with the
  /// embedding of timestep 0 (they are clean), the noisy image's with t.
  bool zero_cond_t = false;

  /// The timestep's sinusoid width (Timesteps(num_channels=256); fixed in
  /// the reference, not a config key).
  static constexpr int64_t timestep_frequency_dim = 256;

  int64_t inner_dim() const { return attention_head_dim * num_attention_heads; }

  /// Qwen/Qwen-Image's transformer/config.json (20,430,401,088 parameters).
  static QwenImageTransformerConfig default_config();
  /// 2 layers, 2 heads of 32 (axes 8/12/12), text of 64 features (the tiny
  /// Qwen2.5-VL's hidden size).
  static QwenImageTransformerConfig tiny_config();
  /// From a diffusers `config.json`; absent keys take the diffusers defaults.
  /// ConfigError (file and key) for a value out of range, inconsistent sizes
  /// (head width != sum(axes_dims_rope), in_channels != patch^2 x
  /// out_channels) or what this model does not implement (guidance_embeds,
  /// use_additional_t_cond, use_layer3d_rope, a patch size other than 2).
  static QwenImageTransformerConfig from_json(const mold::JsonConfig& json);
};

}  // namespace qwen_image
