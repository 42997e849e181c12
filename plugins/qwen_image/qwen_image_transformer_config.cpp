#include "qwen_image_transformer_config.hpp"

#include <algorithm>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <numeric>
#include <string>

namespace qwen_image {

using mold::ConfigError;
using mold::JsonConfig;

QwenImageTransformerConfig QwenImageTransformerConfig::default_config() {
  return QwenImageTransformerConfig{};  // the member defaults are Qwen-Image's
}

QwenImageTransformerConfig QwenImageTransformerConfig::tiny_config() {
  QwenImageTransformerConfig c;
  c.num_layers = 2;
  c.attention_head_dim = 32;
  c.num_attention_heads = 2;
  c.joint_attention_dim = 64;
  c.axes_dims_rope = {8, 12, 12};
  return c;
}

QwenImageTransformerConfig QwenImageTransformerConfig::from_json(
    const JsonConfig& json) {
  if (json.has_value("_class_name") &&
      json.string("_class_name") != "QwenImageTransformer2DModel")
    json.fail("_class_name",
              "is '" + json.string("_class_name") +
                  "'; this model reads a QwenImageTransformer2DModel config");
  QwenImageTransformerConfig c;  // diffusers' __init__ defaults where absent
  c.patch_size = json.integer_or("patch_size", c.patch_size, 1, 64);
  c.in_channels = json.integer_or("in_channels", c.in_channels, 1, 1 << 16);
  c.out_channels = json.integer_or("out_channels", c.out_channels, 1, 1 << 16);
  c.num_layers = json.integer_or("num_layers", c.num_layers, 0, 1024);
  c.attention_head_dim =
      json.integer_or("attention_head_dim", c.attention_head_dim, 2, 1 << 12);
  c.num_attention_heads =
      json.integer_or("num_attention_heads", c.num_attention_heads, 1, 1024);
  c.joint_attention_dim =
      json.integer_or("joint_attention_dim", c.joint_attention_dim, 1, 1 << 16);
  if (json.has_value("axes_dims_rope"))
    c.axes_dims_rope = json.integers("axes_dims_rope", 0, 1 << 12);
  c.zero_cond_t = json.boolean_or("zero_cond_t", false);

  if (c.patch_size != 2)
    json.fail("patch_size",
              "is " + std::to_string(c.patch_size) +
                  "; the Qwen-Image pipelines pack 2x2 patches, the only "
                  "size implemented");
  if (c.in_channels != c.patch_size * c.patch_size * c.out_channels)
    json.fail("in_channels",
              "is " + std::to_string(c.in_channels) +
                  " but the packed tokens of patch_size " +
                  std::to_string(c.patch_size) + " and out_channels " +
                  std::to_string(c.out_channels) + " have " +
                  std::to_string(c.patch_size * c.patch_size * c.out_channels));
  if (json.boolean_or("guidance_embeds", false))
    json.fail("guidance_embeds",
              "is true (a guidance-distilled variant with a guidance "
              "embedding); the published Qwen-Image models have none and "
              "it is not implemented");
  for (const char* unsupported : {"use_additional_t_cond", "use_layer3d_rope"})
    if (json.boolean_or(unsupported, false))
      json.fail(unsupported,
                "is true; no published Qwen-Image or Qwen-Image-Edit "
                "checkpoint mold runs uses it and it is not implemented");
  if (c.axes_dims_rope.size() != 3)
    json.fail("axes_dims_rope",
              "has " + std::to_string(c.axes_dims_rope.size()) +
                  " entries; the positions are 3-D (frame, row, column)");
  for (int64_t d : c.axes_dims_rope)
    if (d % 2 != 0)
      json.fail("axes_dims_rope",
                mold::list_text(c.axes_dims_rope) + " holds an odd width (" +
                    std::to_string(d) + "); each axis rotates pairs");
  const int64_t sum = std::accumulate(c.axes_dims_rope.begin(),
                                      c.axes_dims_rope.end(), int64_t(0));
  if (sum != c.attention_head_dim)
    json.fail("axes_dims_rope", mold::list_text(c.axes_dims_rope) +
                                    " sums to " + std::to_string(sum) +
                                    " but attention_head_dim is " +
                                    std::to_string(c.attention_head_dim));
  return c;
}

}  // namespace qwen_image
