#include "qwen25vl_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <numeric>
#include <string>

namespace qwen_image {

using mold::ConfigError;
using mold::JsonConfig;

namespace {

Qwen25VLVisionConfig vision_from_json(const JsonConfig& json) {
  Qwen25VLVisionConfig v;
  v.depth = json.integer_or("depth", v.depth, 1, 1024);
  // Qwen2_5_VLVisionConfig's default for an absent key is 3584 (the
  // published config gives 1280).
  v.hidden_size = json.integer_or("hidden_size", 3584, 1, 1 << 16);
  v.intermediate_size =
      json.integer_or("intermediate_size", v.intermediate_size, 1, 1 << 18);
  v.num_heads = json.integer_or("num_heads", v.num_heads, 1, 1024);
  v.in_channels = json.integer_or("in_channels", v.in_channels, 1, 16);
  if (v.in_channels != 3)
    json.fail("in_channels",
              fmt::format("is {}; the image processor makes RGB patches (3 "
                          "channels), the only input implemented",
                          v.in_channels));
  v.patch_size = json.integer_or("patch_size", v.patch_size, 1, 1024);
  v.temporal_patch_size =
      json.integer_or("temporal_patch_size", v.temporal_patch_size, 1, 16);
  v.spatial_merge_size =
      json.integer_or("spatial_merge_size", v.spatial_merge_size, 1, 16);
  v.window_size = json.integer_or("window_size", v.window_size, 1, 1 << 16);
  if (json.has_value("fullatt_block_indexes"))
    v.fullatt_block_indexes =
        json.integers("fullatt_block_indexes", 0, v.depth - 1);
  v.out_hidden_size =
      json.integer_or("out_hidden_size", v.out_hidden_size, 1, 1 << 16);
  const std::string act = json.string_or("hidden_act", "silu");
  if (act != "silu")
    json.fail("hidden_act",
              fmt::format("is '{}'; only silu (Qwen2.5-VL's SwiGLU vision "
                          "MLP) is implemented",
                          act));
  if (v.hidden_size % v.num_heads != 0 || v.head_dim() % 4 != 0)
    json.fail("num_heads",
              fmt::format("{} heads of hidden_size {}: the head width must "
                          "be a whole multiple of 4 (its 2-D rotary)",
                          v.num_heads, v.hidden_size));
  const int64_t window_patches = v.window_size / v.patch_size;
  if (v.window_size % (v.patch_size * v.spatial_merge_size) != 0 ||
      window_patches < v.spatial_merge_size)
    json.fail("window_size",
              fmt::format("is {}; it must be a multiple of patch_size x "
                          "spatial_merge_size ({})",
                          v.window_size, v.patch_size * v.spatial_merge_size));
  return v;
}

}  // namespace

Qwen25VLConfig Qwen25VLConfig::default_config() {
  return Qwen25VLConfig{};  // the member defaults are Qwen2.5-VL-7B's
}

Qwen25VLConfig Qwen25VLConfig::tiny_config() {
  Qwen25VLConfig c;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.mrope_section = {2, 3, 3};
  c.vision.depth = 2;
  c.vision.hidden_size = 32;
  c.vision.intermediate_size = 64;
  c.vision.num_heads = 2;
  c.vision.fullatt_block_indexes = {1};
  c.vision.out_hidden_size = 64;
  return c;
}

Qwen25VLConfig Qwen25VLConfig::from_json(const JsonConfig& json) {
  if (json.has_value("model_type") && json.string("model_type") != "qwen2_5_vl")
    json.fail("model_type",
              fmt::format("is '{}'; the qwen_image text encoder is a "
                          "qwen2_5_vl model (Qwen2.5-VL)",
                          json.string("model_type")));
  // transformers >= 4.52 writes the text fields under text_config, and
  // Qwen2_5_VLConfig takes them from there whenever it is given (the
  // top-level copies only without it).
  const JsonConfig text =
      json.has_value("text_config") ? json.object("text_config") : json;
  const std::string act = text.string_or("hidden_act", "silu");
  if (act != "silu")
    text.fail("hidden_act",
              fmt::format("is '{}'; only silu (the SwiGLU MLP) is "
                          "implemented",
                          act));
  if (text.boolean_or("use_sliding_window", false))
    text.fail("use_sliding_window",
              "is true; sliding-window attention is not implemented");
  Qwen25VLConfig c;
  c.vocab_size = text.integer("vocab_size", 1, 1 << 24);
  c.hidden_size = text.integer("hidden_size", 1, 1 << 16);
  c.intermediate_size = text.integer("intermediate_size", 1, 1 << 18);
  c.num_hidden_layers = text.integer("num_hidden_layers", 1, 1024);
  c.num_attention_heads = text.integer("num_attention_heads", 1, 1024);
  // Qwen2_5_VLTextConfig's default for an absent key is 8.
  c.num_key_value_heads =
      text.integer_or("num_key_value_heads", 8, 1, c.num_attention_heads);
  // Qwen2_5_VLTextConfig's default where the key is absent (the published
  // config gives 1e-6).
  c.rms_norm_eps = text.number_or("rms_norm_eps", 1e-5);
  c.rope_theta = text.number_or("rope_theta", 1000000.0);
  c.max_position_embeddings = text.integer_or(
      "max_position_embeddings", c.max_position_embeddings, 1, 1 << 24);
  // rope_scaling wins over rope_parameters (transformers reads
  // `rope_scaling or rope_parameters`), and its legacy "type" over
  // "rope_type" (transformers copies "type" into "rope_type").
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (!text.has_value(key)) continue;
    const JsonConfig rope = text.object(key);
    const std::string type = rope.has_value("type")
                                 ? rope.string("type")
                                 : rope.string_or("rope_type", "default");
    if (type != "default" && type != "mrope")
      text.fail(key, fmt::format("asks for rope type '{}'; only the default "
                                 "multimodal rotary (mrope) is implemented",
                                 type));
    if (rope.has_value("mrope_section"))
      c.mrope_section = rope.integers("mrope_section", 0, 1 << 12);
    if (rope.has_value("rope_theta")) c.rope_theta = rope.number("rope_theta");
  }
  for (auto [key, field] :
       {std::pair<const char*, int64_t*>{"image_token_id", &c.image_token_id},
        {"video_token_id", &c.video_token_id},
        {"vision_start_token_id", &c.vision_start_token_id},
        {"vision_end_token_id", &c.vision_end_token_id}})
    if (json.has_value(key)) *field = json.integer(key, 0, c.vocab_size - 1);
  if (json.has_value("vision_config"))
    c.vision = vision_from_json(json.object("vision_config"));

  if (c.hidden_size % c.num_attention_heads != 0)
    text.fail("num_attention_heads",
              fmt::format("{} heads do not divide hidden_size {}",
                          c.num_attention_heads, c.hidden_size));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    text.fail("num_key_value_heads",
              fmt::format("is {}, which does not divide num_attention_heads "
                          "({})",
                          c.num_key_value_heads, c.num_attention_heads));
  const int64_t sections = std::accumulate(c.mrope_section.begin(),
                                           c.mrope_section.end(), int64_t(0));
  if (c.mrope_section.size() != 3 || 2 * sections != c.head_dim())
    text.fail("rope_scaling.mrope_section",
              fmt::format("is {}; it must have 3 entries (t, h, w) summing "
                          "to head_dim / 2 = {}",
                          mold::list_text(c.mrope_section), c.head_dim() / 2));
  if (!(c.rms_norm_eps > 0) || c.rms_norm_eps > 1)
    text.fail("rms_norm_eps",
              fmt::format("is {}; it must be in (0, 1]", c.rms_norm_eps));
  if (!(c.rope_theta > 1))
    text.fail("rope_theta",
              fmt::format("is {}; it must be greater than 1", c.rope_theta));
  if (c.vision.out_hidden_size != c.hidden_size)
    json.fail("vision_config.out_hidden_size",
              fmt::format("is {} but the language model's hidden_size is "
                          "{}: the merged image features replace token "
                          "embeddings",
                          c.vision.out_hidden_size, c.hidden_size));
  return c;
}

}  // namespace qwen_image
