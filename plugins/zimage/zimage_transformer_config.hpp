#pragma once
// The Z-Image transformer's architecture: the arguments of diffusers'
// ZImageTransformer2DModel.__init__, built in or read from a config.json.
// Torch-free: estimates read it in processes that never load libtorch.

#include <cstdint>
#include <mold/config/json_config.hpp>
#include <utility>
#include <vector>

namespace zimage {

/// The arguments of ZImageTransformer2DModel.__init__ this model honours.
struct ZImageTransformerConfig {
  /// (patch_size, f_patch_size) pairs of all_patch_size / all_f_patch_size;
  /// each has its own x embedder and final layer. forward() uses (2, 1), the
  /// only pair the pipeline calls the model with, so it must be present.
  std::vector<std::pair<int64_t, int64_t>> patch_sizes{{2, 1}};
  int64_t in_channels = 16;
  int64_t dim = 3840;
  int64_t n_layers = 30;
  int64_t n_refiner_layers = 2;
  int64_t n_heads = 30;
  int64_t n_kv_heads = 30;
  double norm_eps = 1e-5;
  bool qk_norm = true;
  int64_t cap_feat_dim = 2560;
  double rope_theta = 256.0;
  double t_scale = 1000.0;
  std::vector<int64_t> axes_dims{32, 48, 48};
  std::vector<int64_t> axes_lens{1536, 512, 512};

  /// The timestep's sinusoid width and t_embedder's hidden width (fixed in
  /// the reference, not config keys).
  static constexpr int64_t timestep_frequency_dim = 256;
  static constexpr int64_t timestep_hidden = 1024;

  int64_t head_dim() const { return dim / n_heads; }
  /// The width of the timestep embedding that modulates: min(dim, 256).
  int64_t adaln_dim() const;
  /// The SwiGLU hidden width, int(dim / 3 * 8) as in the reference.
  int64_t ffn_dim() const;

  /// Tongyi-MAI/Z-Image-Turbo's transformer/config.json (6,154,908,736
  /// parameters).
  static ZImageTransformerConfig default_config();
  /// dim 64, 2 heads of 32 (axes 8/12/12), 2 layers, 1 refiner layer each,
  /// captions of 32 features (the tiny Qwen3 text encoder's hidden size).
  static ZImageTransformerConfig tiny_config();
  /// From a diffusers `config.json`; absent keys take the diffusers defaults.
  /// ConfigError (file and key) for a value out of range, inconsistent sizes
  /// (head_dim != sum(axes_dims)), or what this model does not implement:
  /// SigLIP inputs (siglip_feat_dim, the Omni variant), n_kv_heads other than
  /// n_heads (diffusers ignores it), f_patch_size other than 1, no (2, 1)
  /// patch pair.
  static ZImageTransformerConfig from_json(const mold::JsonConfig& json);
};

}  // namespace zimage
