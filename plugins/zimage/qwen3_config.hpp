#pragma once
// The Qwen3 text encoder's architecture: the fields of a transformers Qwen3
// config.json, built in or read from one. Torch-free: estimates read it in
// processes that never load libtorch.

#include <cstdint>
#include <mold/config/json_config.hpp>

namespace zimage {

/// The fields of a transformers Qwen3 `config.json` this encoder honours.
struct Qwen3Config {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 2560;
  int64_t intermediate_size = 9728;
  int64_t num_hidden_layers = 36;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 8;
  int64_t head_dim = 128;
  double rms_norm_eps = 1e-6;
  double rope_theta = 1000000.0;
  bool attention_bias = false;
  int64_t max_position_embeddings = 40960;

  /// Qwen3-4B, the text encoder of Z-Image-Turbo (4,022,468,096 parameters).
  static Qwen3Config default_config();
  /// The real vocabulary (the tokenizer's ids work) with a tiny body: hidden
  /// 32, 3 layers, 4 heads of 8, 2 key/value heads, MLP 64.
  static Qwen3Config tiny_config();
  /// From a transformers `config.json`. Absent keys take transformers'
  /// Qwen3Config defaults. ConfigError (file and key) for a missing required
  /// size, a value out of range, or a feature this encoder does not implement:
  /// rope scaling, an activation other than silu, sliding-window attention, a
  /// model_type other than qwen3.
  static Qwen3Config from_json(const mold::JsonConfig& json);
};

}  // namespace zimage
