#pragma once
// The Qwen2.5-VL text encoder of Qwen-Image and Qwen-Image-Edit
// (transformers' Qwen2_5_VLForConditionalGeneration: Qwen2.5-VL-7B-Instruct
// in the published models), returning the hidden state the pipelines
// condition on, hidden_states[-1]: the final norm of the last decoder layer.
// The language model is here; its vision tower (the edit images' tokens) is
// qwen25vl_vision.cpp. lm_head is stored in the checkpoint but unused.

#include <cstdint>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/config/json_config.hpp>
#include <mold/model/text_encoder.hpp>
#include <string>
#include <vector>

#include "qwen25vl_config.hpp"

namespace qwen_image {

/// One image for the vision tower, as Qwen2VLImageProcessor makes it.
struct VisionImage {
  /// (t x h x w, patch_values) float: the flattened patches, in the
  /// processor's order (2x2 merge groups of patches, row-major).
  at::Tensor pixel_values;
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;  ///< patches per axis
};

class Qwen25VLTextEncoder final : public mold::TextEncoder {
 public:
  /// Declares the parameters (shapes only) under the published checkpoint's
  /// names: `model.embed_tokens.weight`, `model.layers.N.self_attn.q_proj.
  /// weight`, ..., `model.norm.weight`, and with `with_vision` the tower's
  /// `visual.patch_embed.proj.weight`, `visual.blocks.N.attn.qkv.weight`,
  /// ..., `visual.merger.mlp.2.bias`. Without it (text-to-image) the tower's
  /// tensors in a checkpoint are skipped, like lm_head.weight.
  Qwen25VLTextEncoder(const Qwen25VLConfig& config, std::string arch,
                      bool with_vision);

  std::string describe() const override;
  /// hidden_states[-1] of a text-only input: positions are the cumulative
  /// count of real tokens (transformers' get_rope_index without images);
  /// causal attention that never attends to padding.
  at::Tensor encode(const at::Tensor& input_ids,
                    const at::Tensor& attention_mask) const override;
  /// hidden_states[-1] of a prompt with images: each run of image_token_id
  /// in input_ids (batch 1) takes the vision tower's features of the next
  /// image, in order, with the multimodal positions of get_rope_index.
  /// InvalidArgument when the image tokens and the images' merged patches
  /// disagree, or when the model was built without its vision tower.
  /// `features`, when given, are vision_features(images) computed before
  /// (the negative prompt of an edit sees the same images).
  at::Tensor encode_with_images(const at::Tensor& input_ids,
                                const std::vector<VisionImage>& images,
                                const at::Tensor& features = {}) const;
  /// The vision tower alone: every image's merged features (sum of t h w /
  /// merge^2, hidden_size), in order.
  at::Tensor vision_features(const std::vector<VisionImage>& images) const;
  /// The number of image tokens an image of this grid takes.
  int64_t image_tokens(const VisionImage& image) const;

  int64_t hidden_size() const override { return config_.hidden_size; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  bool has_vision() const { return with_vision_; }
  const Qwen25VLConfig& config() const { return config_; }
  bool unused_tensor(const std::string& stored_name) const override;

 private:
  void declare_vision();
  void check_ids(const at::Tensor& input_ids) const;
  void check_image(const VisionImage& image, std::size_t index) const;
  at::Tensor rms_norm(const at::Tensor& x, const std::string& weight,
                      double eps) const;
  at::Tensor linear(const at::Tensor& x, const std::string& prefix) const;
  /// positions (3, B, L) int64 -> cos, sin (B, 1, L, head_dim) in `dtype`.
  std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& positions) const;
  /// The language model's layer, as the shared decoder layer takes it.
  mold::DecoderLayerConfig layer_config() const;
  at::Tensor decode(at::Tensor embeddings, const at::Tensor& positions,
                    const at::Tensor& attention_mask) const;
  at::Tensor vision_block(const at::Tensor& x, int64_t block,
                          const at::Tensor& cos, const at::Tensor& sin,
                          const std::vector<int64_t>& bounds) const;

  Qwen25VLConfig config_;
  std::string arch_;
  bool with_vision_;
};

/// The registry's text encoder factory: "default" (Qwen2.5-VL-7B-Instruct),
/// "tiny", or a transformers config.json, with the vision tower.
/// Parameters declared only; the caller seeds or loads them.
/// InvalidArgument for an unknown built-in name.
std::unique_ptr<mold::TextEncoder> make_qwen25vl_text_encoder(
    const mold::ArchSpec& arch);
/// The same, with or without the vision tower.
std::unique_ptr<Qwen25VLTextEncoder> make_qwen25vl_text_encoder(
    const mold::ArchSpec& arch, bool with_vision);

}  // namespace qwen_image
