#include "qwen3_config.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>
#include <string>

namespace zimage {

using mold::ConfigError;
using mold::JsonConfig;

Qwen3Config Qwen3Config::default_config() {
  return Qwen3Config{};  // the member defaults are Qwen3-4B's config.json
}

Qwen3Config Qwen3Config::tiny_config() {
  Qwen3Config c;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  return c;
}

Qwen3Config Qwen3Config::from_json(const JsonConfig& json) {
  if (json.has_value("model_type") && json.string("model_type") != "qwen3")
    json.fail("model_type",
              fmt::format("is '{}'; the zimage text encoder is a qwen3 model",
                          json.string("model_type")));
  const std::string act = json.string_or("hidden_act", "silu");
  if (act != "silu")
    json.fail("hidden_act",
              fmt::format("is '{}'; only silu (the SwiGLU MLP of Qwen3) is "
                          "implemented",
                          act));
  if (json.boolean_or("use_sliding_window", false))
    json.fail("use_sliding_window",
              "is true; sliding-window attention is not implemented");
  if (json.has_value("layer_types"))
    for (const std::string& type : json.strings("layer_types"))
      if (type != "full_attention")
        json.fail("layer_types",
                  fmt::format("has '{}'; only full_attention layers are "
                              "implemented",
                              type));

  Qwen3Config c;
  // Bounds far above any published Qwen3 (4B: 151936, 2560, 9728, 36, 32,
  // 8, 128) and far below what would overflow a size: a config past them is
  // refused naming the key, not run into an out-of-memory.
  c.vocab_size = json.integer("vocab_size", 1, 1 << 24);
  c.hidden_size = json.integer("hidden_size", 1, 1 << 16);
  c.intermediate_size = json.integer("intermediate_size", 1, 1 << 18);
  c.num_hidden_layers = json.integer("num_hidden_layers", 1, 1024);
  c.num_attention_heads = json.integer("num_attention_heads", 1, 1024);
  // Qwen3Config's default for an absent key is 32.
  c.num_key_value_heads =
      json.integer_or("num_key_value_heads", 32, 1, c.num_attention_heads);
  c.head_dim = json.integer_or("head_dim", 128, 2, 1024);
  c.rms_norm_eps = json.number_or("rms_norm_eps", 1e-6);
  c.attention_bias = json.boolean_or("attention_bias", false);
  c.max_position_embeddings =
      json.integer_or("max_position_embeddings", 32768, 1, 1 << 24);

  // Rotary: the legacy keys (rope_theta, rope_scaling) or transformers 5's
  // rope_parameters; only the default (unscaled) rope is implemented.
  c.rope_theta = json.number_or("rope_theta", 10000.0);
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!json.has_value(key)) continue;
    const JsonConfig rope = json.object(key);
    const std::string type = rope.has_value("rope_type")
                                 ? rope.string("rope_type")
                                 : rope.string_or("type", "default");
    if (type != "default")
      json.fail(key, fmt::format("asks for rope type '{}'; only the default "
                                 "(unscaled) rotary embedding is implemented",
                                 type));
    if (rope.has_value("rope_theta")) c.rope_theta = rope.number("rope_theta");
  }

  if (c.num_attention_heads % c.num_key_value_heads != 0)
    json.fail("num_key_value_heads",
              fmt::format("is {}, which does not divide num_attention_heads "
                          "({})",
                          c.num_key_value_heads, c.num_attention_heads));
  if (c.head_dim % 2 != 0)
    json.fail("head_dim",
              fmt::format("is {}; the rotary embedding needs an even head_dim",
                          c.head_dim));
  if (!(c.rms_norm_eps > 0))
    json.fail("rms_norm_eps",
              fmt::format("is {}; it must be positive", c.rms_norm_eps));
  if (!(c.rope_theta > 0))
    json.fail("rope_theta",
              fmt::format("is {}; it must be positive", c.rope_theta));
  return c;
}

}  // namespace zimage
