#include "zimage_transformer_config.hpp"

#include <algorithm>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <numeric>
#include <string>

namespace zimage {

using mold::ConfigError;
using mold::JsonConfig;

namespace {

constexpr int64_t kAdalnEmbedDim = 256;  // ADALN_EMBED_DIM

}  // namespace

int64_t ZImageTransformerConfig::adaln_dim() const {
  return std::min(dim, kAdalnEmbedDim);
}

int64_t ZImageTransformerConfig::ffn_dim() const {
  return static_cast<int64_t>(static_cast<double>(dim) / 3.0 * 8.0);
}

ZImageTransformerConfig ZImageTransformerConfig::default_config() {
  return ZImageTransformerConfig{};  // the member defaults are Turbo's
}

ZImageTransformerConfig ZImageTransformerConfig::tiny_config() {
  ZImageTransformerConfig c;
  c.dim = 64;
  c.n_layers = 2;
  c.n_refiner_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.cap_feat_dim = 32;
  c.axes_dims = {8, 12, 12};
  c.axes_lens = {1536, 512, 512};
  return c;
}

ZImageTransformerConfig ZImageTransformerConfig::from_json(
    const JsonConfig& json) {
  if (json.has_value("_class_name") &&
      json.string("_class_name") != "ZImageTransformer2DModel")
    json.fail("_class_name",
              "is '" + json.string("_class_name") +
                  "'; this model reads a ZImageTransformer2DModel config");
  ZImageTransformerConfig c;       // diffusers' __init__ defaults where absent:
  c.axes_lens = {1024, 512, 512};  // (Turbo's config says 1536)
  std::vector<int64_t> patches{2}, f_patches{1};
  if (json.has_value("all_patch_size"))
    patches = json.integers("all_patch_size", 1, 64);
  if (json.has_value("all_f_patch_size"))
    f_patches = json.integers("all_f_patch_size", 1, 64);
  if (patches.empty() || patches.size() != f_patches.size())
    json.fail("all_f_patch_size", "must be as long as all_patch_size (" +
                                      std::to_string(patches.size()) +
                                      " entries), not " +
                                      std::to_string(f_patches.size()));
  c.patch_sizes.clear();
  for (std::size_t i = 0; i < patches.size(); ++i) {
    if (f_patches[i] != 1)
      json.fail("all_f_patch_size",
                "holds " + std::to_string(f_patches[i]) +
                    "; only 1 (one-frame images) is implemented");
    c.patch_sizes.emplace_back(patches[i], f_patches[i]);
  }
  if (std::find(c.patch_sizes.begin(), c.patch_sizes.end(),
                std::make_pair(int64_t(2), int64_t(1))) == c.patch_sizes.end())
    json.fail("all_patch_size",
              "has no patch size 2 (with f_patch_size 1), the one the "
              "pipeline runs the model with");
  c.in_channels = json.integer_or("in_channels", c.in_channels, 1, 4096);
  c.dim = json.integer_or("dim", c.dim, 1, 1 << 16);
  c.n_layers = json.integer_or("n_layers", c.n_layers, 0, 1024);
  c.n_refiner_layers =
      json.integer_or("n_refiner_layers", c.n_refiner_layers, 0, 1024);
  c.n_heads = json.integer_or("n_heads", c.n_heads, 1, 4096);
  c.n_kv_heads = json.integer_or("n_kv_heads", c.n_heads, 1, 4096);
  c.norm_eps = json.number_or("norm_eps", c.norm_eps);
  c.qk_norm = json.boolean_or("qk_norm", c.qk_norm);
  c.cap_feat_dim = json.integer_or("cap_feat_dim", c.cap_feat_dim, 1, 1 << 16);
  c.rope_theta = json.number_or("rope_theta", c.rope_theta);
  c.t_scale = json.number_or("t_scale", c.t_scale);
  if (json.has_value("axes_dims"))
    c.axes_dims = json.integers("axes_dims", 0, 1 << 16);
  if (json.has_value("axes_lens"))
    c.axes_lens = json.integers("axes_lens", 1, 1 << 24);

  if (json.has_value("siglip_feat_dim"))
    json.fail("siglip_feat_dim",
              "is set (the Omni variant's SigLIP image inputs); only the "
              "text-to-image model is implemented: leave it null");
  if (c.n_kv_heads != c.n_heads)
    json.fail("n_kv_heads",
              "is " + std::to_string(c.n_kv_heads) + " but n_heads is " +
                  std::to_string(c.n_heads) +
                  ": diffusers' ZImageTransformer2DModel has no grouped "
                  "key/value heads (it ignores n_kv_heads), so a checkpoint "
                  "made for them would not be this model");
  if (c.dim % c.n_heads != 0)
    json.fail("n_heads", std::to_string(c.n_heads) +
                             " heads do not divide dim " +
                             std::to_string(c.dim));
  if (!(c.norm_eps > 0) || c.norm_eps > 1)
    json.fail("norm_eps", "must be in (0, 1]");
  if (!(c.rope_theta > 1)) json.fail("rope_theta", "must be greater than 1");
  if (!(c.t_scale > 0)) json.fail("t_scale", "must be positive");
  if (c.axes_dims.size() != 3)
    json.fail("axes_dims",
              "has " + std::to_string(c.axes_dims.size()) +
                  " entries; the positions are 3-D (frame or caption "
                  "index, row, column)");
  if (c.axes_lens.size() != c.axes_dims.size())
    json.fail("axes_lens", "has " + std::to_string(c.axes_lens.size()) +
                               " entries but axes_dims has " +
                               std::to_string(c.axes_dims.size()));
  for (int64_t d : c.axes_dims)
    if (d % 2 != 0)
      json.fail("axes_dims", mold::list_text(c.axes_dims) +
                                 " holds an odd width (" + std::to_string(d) +
                                 "); each axis rotates pairs");
  const int64_t sum =
      std::accumulate(c.axes_dims.begin(), c.axes_dims.end(), int64_t(0));
  if (sum != c.head_dim())
    json.fail("axes_dims", mold::list_text(c.axes_dims) + " sums to " +
                               std::to_string(sum) +
                               " but the head width dim / n_heads is " +
                               std::to_string(c.head_dim()));
  return c;
}

}  // namespace zimage
