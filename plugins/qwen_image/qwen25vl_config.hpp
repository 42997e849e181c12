#pragma once
// The Qwen2.5-VL text encoder's architecture (language model and vision
// tower): the fields of a transformers config.json, built in or read from
// one. Torch-free: estimates read it in processes that never load libtorch.

#include <cstdint>
#include <mold/config/json_config.hpp>
#include <vector>

namespace qwen_image {

/// The fields of vision_config this tower honours.
struct Qwen25VLVisionConfig {
  int64_t depth = 32;
  int64_t hidden_size = 1280;
  int64_t intermediate_size = 3420;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 14;
  int64_t temporal_patch_size = 2;
  int64_t spatial_merge_size = 2;
  int64_t window_size = 112;  ///< pixels per attention window side
  std::vector<int64_t> fullatt_block_indexes{7, 15, 23, 31};
  int64_t out_hidden_size = 3584;

  int64_t head_dim() const { return hidden_size / num_heads; }
  /// Values per patch: channels x temporal x patch x patch (1176).
  int64_t patch_values() const {
    return in_channels * temporal_patch_size * patch_size * patch_size;
  }
};

/// The fields of a transformers Qwen2.5-VL `config.json` this encoder honours.
struct Qwen25VLConfig {
  int64_t vocab_size = 152064;
  int64_t hidden_size = 3584;
  int64_t intermediate_size = 18944;
  int64_t num_hidden_layers = 28;
  int64_t num_attention_heads = 28;
  int64_t num_key_value_heads = 4;
  double rms_norm_eps = 1e-6;
  double rope_theta = 1000000.0;
  /// Frequencies per position axis (t, h, w) of the multimodal rotary; they
  /// sum to head_dim / 2.
  std::vector<int64_t> mrope_section{16, 24, 24};
  int64_t max_position_embeddings = 128000;
  int64_t image_token_id = 151655;
  int64_t video_token_id = 151656;
  int64_t vision_start_token_id = 151652;
  int64_t vision_end_token_id = 151653;
  Qwen25VLVisionConfig vision;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }

  /// Qwen2.5-VL-7B-Instruct, the text encoder of Qwen-Image (8,292,166,656
  /// parameters with the vision tower and lm_head).
  static Qwen25VLConfig default_config();
  /// The real vocabulary (the tokenizer's ids work) with a tiny body: hidden
  /// 64, 2 layers, 4 heads of 16, 2 key/value heads, MLP 128, mrope [2, 3,
  /// 3]; vision tower of 2 blocks (the second full attention), hidden 32, 2
  /// heads, MLP 64, into 64.
  static Qwen25VLConfig tiny_config();
  /// From a transformers `config.json` (top-level text fields or a
  /// text_config, and a vision_config). ConfigError (file and key) for a
  /// missing size, a value out of range, or what is not implemented: rope
  /// scaling other than mrope/default, an activation other than silu,
  /// sliding-window attention, a model_type other than qwen2_5_vl.
  static Qwen25VLConfig from_json(const mold::JsonConfig& json);
};

}  // namespace qwen_image
