#include "qwen25vl_text_encoder.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/arch_config.hpp>
#include <mold/model/decoder_layer.hpp>
#include <mold/tensor/rms_norm.hpp>
#include <utility>

namespace qwen_image {

using mold::ConfigError;
using mold::InvalidArgument;
using mold::JsonConfig;

Qwen25VLTextEncoder::Qwen25VLTextEncoder(const Qwen25VLConfig& config,
                                         std::string arch, bool with_vision)
    : config_(config), arch_(std::move(arch)), with_vision_(with_vision) {
  const Qwen25VLConfig& c = config_;
  add("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  declare_decoder_layers("model.layers.", c.num_hidden_layers, layer_config());
  add("model.norm.weight", {c.hidden_size});
  if (with_vision_) declare_vision();
}

void Qwen25VLTextEncoder::declare_vision() {
  const Qwen25VLVisionConfig& v = config_.vision;
  const int64_t hidden = v.hidden_size, mid = v.intermediate_size;
  add("visual.patch_embed.proj.weight",
      {hidden, v.in_channels, v.temporal_patch_size, v.patch_size,
       v.patch_size});
  for (int64_t i = 0; i < v.depth; ++i) {
    const std::string b = fmt::format("visual.blocks.{}.", i);
    add(b + "norm1.weight", {hidden});
    add(b + "norm2.weight", {hidden});
    add(b + "attn.qkv.weight", {3 * hidden, hidden});
    add(b + "attn.qkv.bias", {3 * hidden});
    add(b + "attn.proj.weight", {hidden, hidden});
    add(b + "attn.proj.bias", {hidden});
    add(b + "mlp.gate_proj.weight", {mid, hidden});
    add(b + "mlp.gate_proj.bias", {mid});
    add(b + "mlp.up_proj.weight", {mid, hidden});
    add(b + "mlp.up_proj.bias", {mid});
    add(b + "mlp.down_proj.weight", {hidden, mid});
    add(b + "mlp.down_proj.bias", {hidden});
  }
  const int64_t merged = hidden * v.spatial_merge_size * v.spatial_merge_size;
  add("visual.merger.ln_q.weight", {hidden});
  add("visual.merger.mlp.0.weight", {merged, merged});
  add("visual.merger.mlp.0.bias", {merged});
  add("visual.merger.mlp.2.weight", {v.out_hidden_size, merged});
  add("visual.merger.mlp.2.bias", {v.out_hidden_size});
}

std::string Qwen25VLTextEncoder::describe() const {
  return "qwen_image text encoder (Qwen2.5-VL, " + arch_ + ")";
}

bool Qwen25VLTextEncoder::unused_tensor(const std::string& name) const {
  return name == "lm_head.weight" ||
         (!with_vision_ && name.compare(0, 7, "visual.") == 0);
}

void Qwen25VLTextEncoder::check_ids(const at::Tensor& ids) const {
  check_token_ids(ids, config_.max_position_embeddings);
}

at::Tensor Qwen25VLTextEncoder::rms_norm(const at::Tensor& x,
                                         const std::string& weight,
                                         double eps) const {
  return mold::transformers_rms_norm(x, p(weight), eps);
}

at::Tensor Qwen25VLTextEncoder::linear(const at::Tensor& x,
                                       const std::string& prefix) const {
  const std::string bias = prefix + ".bias";
  return at::linear(x, weight(prefix + ".weight"),
                    has(bias) ? c10::optional<at::Tensor>(p(bias))
                              : c10::optional<at::Tensor>());
}

std::pair<at::Tensor, at::Tensor> Qwen25VLTextEncoder::rotary(
    const at::Tensor& positions) const {
  // Qwen2_5_VLRotaryEmbedding in float32: angles (3, B, L, D/2) from each
  // axis' positions, doubled to D (rotate_half convention); then
  // apply_multimodal_rotary_pos_emb's mixing: the D dims split as
  // mrope_section twice over, section i taken from axis i % 3.
  const c10::Device device = this->device();
  const int64_t d = config_.head_dim();
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  const at::Tensor exponents =
      at::arange(0, d, 2, at::TensorOptions().dtype(at::kLong)).to(f32) /
      double(d);
  const at::Tensor inv_freq =
      at::reciprocal(at::pow(config_.rope_theta, exponents));
  const at::Tensor freqs =
      positions.to(device).to(at::kFloat).unsqueeze(-1) * inv_freq;
  const at::Tensor angles = at::cat({freqs, freqs}, -1);  // (3, B, L, D)
  std::vector<int64_t> sections = config_.mrope_section;
  sections.insert(sections.end(), config_.mrope_section.begin(),
                  config_.mrope_section.end());
  std::vector<at::Tensor> cos_parts, sin_parts;
  int64_t offset = 0;
  const at::Tensor cos = angles.cos().to(dtype());
  const at::Tensor sin = angles.sin().to(dtype());
  for (std::size_t i = 0; i < sections.size(); ++i) {
    cos_parts.push_back(
        cos.select(0, int64_t(i % 3)).narrow(-1, offset, sections[i]));
    sin_parts.push_back(
        sin.select(0, int64_t(i % 3)).narrow(-1, offset, sections[i]));
    offset += sections[i];
  }
  return {at::cat(cos_parts, -1).unsqueeze(1),
          at::cat(sin_parts, -1).unsqueeze(1)};
}

mold::DecoderLayerConfig Qwen25VLTextEncoder::layer_config() const {
  mold::DecoderLayerConfig c;
  c.hidden_size = config_.hidden_size;
  c.intermediate_size = config_.intermediate_size;
  c.heads = config_.num_attention_heads;
  c.kv_heads = config_.num_key_value_heads;
  c.head_dim = config_.head_dim();
  c.rms_norm_eps = config_.rms_norm_eps;
  c.qkv_bias = true;  // Qwen2's q, k and v projections; o_proj has none
  return c;
}

at::Tensor Qwen25VLTextEncoder::decode(at::Tensor x,
                                       const at::Tensor& positions,
                                       const at::Tensor& attention_mask) const {
  const auto [cos, sin] = rotary(positions);
  x = run_decoder_layers(std::move(x), "model.layers.",
                         config_.num_hidden_layers, layer_config(), cos, sin,
                         attention_mask);
  return rms_norm(x, "model.norm.weight", config_.rms_norm_eps);
}

at::Tensor Qwen25VLTextEncoder::encode(const at::Tensor& input_ids,
                                       const at::Tensor& attention_mask) const {
  check_ids(input_ids);
  check_attention_mask(input_ids, attention_mask);
  at::NoGradGuard no_grad;
  // get_rope_index without images: the count of real tokens before each
  // (padding at 1, never attended to), the same on the three axes.
  const at::Tensor mask = attention_mask.to(at::kCPU).ne(0).to(at::kLong);
  at::Tensor positions = mask.cumsum(-1) - 1;
  positions.masked_fill_(mask.eq(0), 1);
  return decode(rows_of("model.embed_tokens.weight", input_ids.to(device())),
                positions.unsqueeze(0).expand({3, -1, -1}), attention_mask);
}

std::unique_ptr<Qwen25VLTextEncoder> make_qwen25vl_text_encoder(
    const mold::ArchSpec& arch, bool with_vision) {
  return std::make_unique<Qwen25VLTextEncoder>(
      mold::config_for_arch<Qwen25VLConfig>(arch,
                                            "the qwen_image text encoder"),
      arch.describe(), with_vision);
}

std::unique_ptr<mold::TextEncoder> make_qwen25vl_text_encoder(
    const mold::ArchSpec& arch) {
  return make_qwen25vl_text_encoder(arch, /*with_vision=*/true);
}

}  // namespace qwen_image
