#include "qwen_image_transformer.hpp"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/arch_config.hpp>
#include <mold/tensor/chunked_attention.hpp>
#include <mold/tensor/rms_norm.hpp>
#include <mold/tensor/rotary.hpp>
#include <mold/tensor/timestep_embedding.hpp>
#include <numeric>

namespace qwen_image {

using mold::ConfigError;
using mold::DenoiserInput;
using mold::InvalidArgument;
using mold::JsonConfig;

namespace {

constexpr int64_t kFrequencyDim =
    QwenImageTransformerConfig::timestep_frequency_dim;
constexpr double kTimestepScale = 1000.0;  // Timesteps(scale=1000)
constexpr double kMaxPeriod = 10000.0;     // of the timestep sinusoids
constexpr double kNormEps = 1e-6;          // every norm of the model
constexpr double kRopeTheta = 10000.0;     // QwenEmbedRope(theta=10000)
constexpr int64_t kRopePositions = 4096;   // its pos_freqs / neg_freqs rows

}  // namespace

struct QwenImageTransformer::Rope {
  at::Tensor text_cos, text_sin;    // (L, 1, head_dim / 2), float32
  at::Tensor image_cos, image_sin;  // (S_img, 1, head_dim / 2)
};

/// The timestep embedding every stream is modulated with, and for
/// zero_cond_t the embedding of t = 0 for the image tokens from
/// `noisy_tokens` on (the edit images').
struct QwenImageTransformer::Modulation {
  at::Tensor temb;       // (B, inner_dim)
  at::Tensor temb_zero;  // (B, inner_dim) or undefined
  int64_t noisy_tokens = 0;
};

QwenImageTransformer::QwenImageTransformer(
    const QwenImageTransformerConfig& config, std::string arch)
    : config_(config), arch_(std::move(arch)) {
  const auto& c = config_;
  const int64_t dim = c.inner_dim();
  add("img_in.weight", {dim, c.in_channels});
  add("img_in.bias", {dim});
  add("txt_norm.weight", {c.joint_attention_dim});
  add("txt_in.weight", {dim, c.joint_attention_dim});
  add("txt_in.bias", {dim});
  add("time_text_embed.timestep_embedder.linear_1.weight",
      {dim, kFrequencyDim});
  add("time_text_embed.timestep_embedder.linear_1.bias", {dim});
  add("time_text_embed.timestep_embedder.linear_2.weight", {dim, dim});
  add("time_text_embed.timestep_embedder.linear_2.bias", {dim});
  for (int64_t i = 0; i < c.num_layers; ++i)
    declare_block("transformer_blocks." + std::to_string(i));
  add("norm_out.linear.weight", {2 * dim, dim});
  add("norm_out.linear.bias", {2 * dim});
  const int64_t patch_dim = c.patch_size * c.patch_size * c.out_channels;
  add("proj_out.weight", {patch_dim, dim});
  add("proj_out.bias", {patch_dim});
}

void QwenImageTransformer::declare_block(const std::string& prefix) {
  const int64_t dim = config_.inner_dim();
  const auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    add(prefix + "." + name + ".weight", {out, in});
    add(prefix + "." + name + ".bias", {out});
  };
  for (const char* proj : {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj",
                           "add_v_proj", "to_out.0", "to_add_out"})
    linear(std::string("attn.") + proj, dim, dim);
  for (const char* norm : {"norm_q", "norm_k", "norm_added_q", "norm_added_k"})
    add(prefix + ".attn." + norm + ".weight", {config_.attention_head_dim});
  for (const char* stream : {"img", "txt"}) {
    linear(std::string(stream) + "_mod.1", 6 * dim, dim);
    linear(std::string(stream) + "_mlp.net.0.proj", 4 * dim, dim);
    linear(std::string(stream) + "_mlp.net.2", dim, 4 * dim);
  }
}

std::string QwenImageTransformer::describe() const {
  // zero_cond_t changes the math (Edit-2511's): named where the model is.
  return "qwen_image transformer (" + arch_ +
         (config_.zero_cond_t ? ", zero_cond_t" : "") + ")";
}

at::Tensor QwenImageTransformer::linear(const at::Tensor& x,
                                        const std::string& prefix) const {
  // A quantized matrix (a GGUF variant) is dequantized here for this
  // product only, or for a few rows multiplied from its blocks.
  return linear_with(x, prefix + ".weight", p(prefix + ".bias"));
}

at::Tensor QwenImageTransformer::rms_norm(const at::Tensor& x,
                                          const std::string& weight) const {
  return mold::diffusers_rms_norm(x, p(weight), kNormEps);
}

at::Tensor QwenImageTransformer::timestep_embedding(const at::Tensor& t) const {
  // The model casts the timestep to its dtype, the projection takes it back
  // to float32: sinusoids of 1000 t (cos first), then the MLP in the
  // parameters' dtype.
  const at::Tensor freqs =
      mold::timestep_frequencies(kFrequencyDim, kMaxPeriod, t.device());
  const at::Tensor args =
      (t.to(dtype()).to(at::kFloat).unsqueeze(1) * freqs.unsqueeze(0)) *
      kTimestepScale;
  at::Tensor h = mold::cos_then_sin(args).to(dtype());
  h = at::silu(linear(h, "time_text_embed.timestep_embedder.linear_1"));
  return linear(h, "time_text_embed.timestep_embedder.linear_2");
}

QwenImageTransformer::Rope QwenImageTransformer::rope(
    const std::vector<std::pair<int64_t, int64_t>>& grids,
    int64_t text_len) const {
  // QwenEmbedRope with scale_rope: image j is frame j; its rows and columns
  // are centred (-(n - n/2) .. n/2 - 1); the text follows on all three axes
  // from max over the images of max(rows/2, cols/2). Angle = position x
  // theta^(-2k/d), both float32, as the reference's tables.
  const auto& axes = config_.axes_dims_rope;
  std::vector<at::Tensor> inv_freqs;
  for (int64_t d : axes)
    inv_freqs.push_back(at::reciprocal(
        at::pow(kRopeTheta,
                at::arange(0, d, 2, at::kLong).to(at::kFloat) / double(d))));
  const auto angles_of = [&](const at::Tensor& positions) {
    // positions (N, 3) int64 -> (N, head_dim / 2) float32
    std::vector<at::Tensor> parts;
    for (std::size_t a = 0; a < axes.size(); ++a)
      parts.push_back(at::outer(positions.select(1, int64_t(a)).to(at::kFloat),
                                inv_freqs[a]));
    return at::cat(parts, 1);
  };
  std::vector<at::Tensor> image_positions;
  int64_t text_start = 0;
  for (std::size_t j = 0; j < grids.size(); ++j) {
    const auto [rows, cols] = grids[j];
    const at::Tensor r = at::arange(rows, at::kLong) - (rows - rows / 2);
    const at::Tensor c = at::arange(cols, at::kLong) - (cols - cols / 2);
    at::Tensor pos = at::empty({rows * cols, 3}, at::kLong);
    pos.select(1, 0).fill_(int64_t(j));
    pos.select(1, 1).copy_(r.repeat_interleave(cols));
    pos.select(1, 2).copy_(c.repeat({rows}));
    image_positions.push_back(pos);
    text_start = std::max({text_start, rows / 2, cols / 2});
  }
  const at::Tensor text_positions =
      (at::arange(text_len, at::kLong) + text_start)
          .unsqueeze(1)
          .repeat({1, 3});
  const at::Tensor image_angles = angles_of(at::cat(image_positions, 0));
  const at::Tensor text_angles = angles_of(text_positions);
  const auto device = this->device();
  return Rope{text_angles.cos().unsqueeze(1).to(device),
              text_angles.sin().unsqueeze(1).to(device),
              image_angles.cos().unsqueeze(1).to(device),
              image_angles.sin().unsqueeze(1).to(device)};
}

at::Tensor QwenImageTransformer::attention(
    const at::Tensor& img, const at::Tensor& txt, const std::string& prefix,
    const Rope& rope, const at::Tensor& key_mask, at::Tensor& txt_out) const {
  const int64_t batch = img.size(0), image_len = img.size(1),
                text_len = txt.size(1), seq = image_len + text_len;
  const int64_t heads = config_.num_attention_heads,
                head_dim = config_.attention_head_dim;
  const std::string attn = prefix + ".attn.";
  const auto project = [&](const at::Tensor& x, const std::string& name,
                           const char* norm) {
    at::Tensor t = linear(x, attn + name).view({batch, -1, heads, head_dim});
    return norm ? rms_norm(t, attn + norm + ".weight") : t;
  };
  // Joint [text, image] sequences, (B, H, S, Dh), contiguous so that every
  // chunk's matmuls take them as they are; q carries the 1/sqrt(Dh).
  const auto joint = [&](at::Tensor t, at::Tensor i) {
    return at::cat({std::move(t), std::move(i)}, 1)
        .permute({0, 2, 1, 3})
        .contiguous();
  };
  const at::Tensor q =
      joint(mold::rotate_interleaved_pairs(
                project(txt, "add_q_proj", "norm_added_q"), rope.text_cos,
                rope.text_sin),
            mold::rotate_interleaved_pairs(project(img, "to_q", "norm_q"),
                                           rope.image_cos, rope.image_sin))
          .mul_(1.0 / std::sqrt(double(head_dim)));
  const at::Tensor k_t =
      joint(mold::rotate_interleaved_pairs(
                project(txt, "add_k_proj", "norm_added_k"), rope.text_cos,
                rope.text_sin),
            mold::rotate_interleaved_pairs(project(img, "to_k", "norm_k"),
                                           rope.image_cos, rope.image_sin))
          .transpose(2, 3);  // (B, H, Dh, S)
  const at::Tensor v =
      joint(project(txt, "add_v_proj", nullptr), project(img, "to_v", nullptr));
  // key_mask: the text padding.
  const at::Tensor out = mold::chunked_attention(q, k_t, v, key_mask)
                             .view({batch, seq, heads * head_dim});
  txt_out = linear(out.narrow(1, 0, text_len), attn + "to_add_out");
  return linear(out.narrow(1, text_len, image_len), attn + "to_out.0");
}

void QwenImageTransformer::block(at::Tensor& img, at::Tensor& txt,
                                 const std::string& prefix, const Rope& rope,
                                 const at::Tensor& key_mask,
                                 const Modulation& m) const {
  const int64_t dim = config_.inner_dim();
  // (B, 1, 6 dim) -> shift, scale, gate of the attention, then of the MLP.
  const auto params = [&](const at::Tensor& temb, const char* stream) {
    return linear(at::silu(temb), prefix + "." + stream + "_mod.1")
        .unsqueeze(1)
        .chunk(6, 2);
  };
  const auto norm = [&](const at::Tensor& x) {
    return at::layer_norm(x, {dim}, {}, {}, kNormEps);
  };
  const auto mlp = [&](const at::Tensor& x, const char* stream) {
    const std::string net = prefix + "." + stream + "_mlp.net.";
    return linear(at::gelu(linear(x, net + "0.proj"), "tanh"), net + "2");
  };
  const std::vector<at::Tensor> txt_mod = params(m.temb, "txt");
  const std::vector<at::Tensor> img_mod = params(m.temb, "img");
  std::vector<at::Tensor> zero_mod;
  if (m.temb_zero.defined()) zero_mod = params(m.temb_zero, "img");

  // x (1 + scale) + shift; with zero_cond_t the edit images' tokens (from
  // m.noisy_tokens on) take timestep 0's parameters. Gates likewise.
  const auto modulate = [&](const at::Tensor& x,
                            const std::vector<at::Tensor>& mod,
                            const std::vector<at::Tensor>* zero, int k) {
    const auto one = [&](const at::Tensor& part,
                         const std::vector<at::Tensor>& p) {
      return part * (1 + p[k + 1]) + p[k];
    };
    if (!zero) return one(x, mod);
    return at::cat(
        {one(x.narrow(1, 0, m.noisy_tokens), mod),
         one(x.narrow(1, m.noisy_tokens, x.size(1) - m.noisy_tokens), *zero)},
        1);
  };
  const auto gated = [&](const at::Tensor& y,
                         const std::vector<at::Tensor>& mod,
                         const std::vector<at::Tensor>* zero, int k) {
    if (!zero) return mod[k + 2] * y;
    return at::cat({mod[k + 2] * y.narrow(1, 0, m.noisy_tokens),
                    (*zero)[k + 2] * y.narrow(1, m.noisy_tokens,
                                              y.size(1) - m.noisy_tokens)},
                   1);
  };
  const std::vector<at::Tensor>* zero = zero_mod.empty() ? nullptr : &zero_mod;

  at::Tensor txt_attn;
  at::Tensor img_attn = attention(modulate(norm(img), img_mod, zero, 0),
                                  modulate(norm(txt), txt_mod, nullptr, 0),
                                  prefix, rope, key_mask, txt_attn);
  img = img + gated(img_attn, img_mod, zero, 0);
  txt = txt + gated(txt_attn, txt_mod, nullptr, 0);
  img_attn.reset();
  txt_attn.reset();
  img = img + gated(mlp(modulate(norm(img), img_mod, zero, 3), "img"), img_mod,
                    zero, 3);
  txt = txt + gated(mlp(modulate(norm(txt), txt_mod, nullptr, 3), "txt"),
                    txt_mod, nullptr, 3);
  if (img.scalar_type() == at::kHalf) {
    img.clamp_(-65504, 65504);
    txt.clamp_(-65504, 65504);
  }
}

void QwenImageTransformer::check_input(const DenoiserInput& in) const {
  const auto fail = [](const std::string& field, const at::Tensor& t,
                       const std::string& expected) {
    refuse_input("qwen_image transformer", field, t, expected);
  };
  const int64_t c = config_.out_channels;
  const auto latent_ok = [&](const at::Tensor& t, int64_t batch) {
    return t.defined() && t.dim() == 4 &&
           c10::isFloatingType(t.scalar_type()) && t.size(1) == c &&
           t.size(0) >= 1 && (batch < 0 || t.size(0) == batch) &&
           t.size(2) >= 2 && t.size(3) >= 2 && t.size(2) % 2 == 0 &&
           t.size(3) % 2 == 0 && t.size(2) / 2 <= kRopePositions &&
           t.size(3) / 2 <= kRopePositions;
  };
  const std::string latent_shape =
      ", " + std::to_string(c) +
      ", H, W) floating point with H and W positive multiples of 2 up to " +
      std::to_string(2 * kRopePositions);
  if (!latent_ok(in.latents, -1))
    fail("latents", in.latents, "(B" + latent_shape);
  const int64_t b = in.latents.size(0);
  const std::string bs = std::to_string(b);
  for (std::size_t j = 0; j < in.references.size(); ++j)
    if (!latent_ok(in.references[j], b))
      fail("references[" + std::to_string(j) + "]", in.references[j],
           "(" + bs + latent_shape + ", one per latent");
  if (int64_t(in.references.size()) + 1 > kRopePositions)
    throw InvalidArgument(
        "qwen_image transformer: " + std::to_string(in.references.size()) +
        " reference images; expected at most " +
        std::to_string(kRopePositions - 1));
  check_conditioning("qwen_image transformer", in, b);
}

at::Tensor QwenImageTransformer::forward(const DenoiserInput& input) const {
  check_input(input);
  at::NoGradGuard no_grad;
  const WeightBufferRelease release{*this};
  const auto device = this->device();
  const auto dtype = this->dtype();
  const int64_t batch = input.latents.size(0);
  const int64_t height = input.latents.size(2), width = input.latents.size(3);
  const int64_t rows = height / 2, cols = width / 2;
  const int64_t text_len = input.text.size(1);

  std::vector<std::pair<int64_t, int64_t>> grids{{rows, cols}};
  std::vector<at::Tensor> packed{pack_latents(input.latents.to(device, dtype))};
  for (const at::Tensor& reference : input.references) {
    grids.emplace_back(reference.size(2) / 2, reference.size(3) / 2);
    packed.push_back(pack_latents(reference.to(device, dtype)));
  }
  int64_t text_start = 0;  // where the text's RoPE positions begin
  for (const auto& [r, c] : grids)
    text_start = std::max({text_start, r / 2, c / 2});
  if (text_start + text_len > kRopePositions)
    throw InvalidArgument(
        "qwen_image transformer: text has " + std::to_string(text_len) +
        " tokens after RoPE position " + std::to_string(text_start) +
        " (half the largest image side in patches); the table has " +
        std::to_string(kRopePositions) + " positions: expected at most " +
        std::to_string(kRopePositions - text_start) + " tokens");
  const int64_t noisy_tokens = rows * cols;
  at::Tensor img = linear(at::cat(packed, 1), "img_in");
  packed.clear();
  const int64_t image_len = img.size(1);
  at::Tensor txt = linear(
      rms_norm(input.text.to(device, dtype), "txt_norm.weight"), "txt_in");

  // Keys to ignore: the text's padding (the image tokens are all valid).
  at::Tensor key_mask;
  {
    const at::Tensor valid = input.text_mask.to(device).ne(0);
    if (!valid.all().item<bool>())
      key_mask = at::cat(
          {valid,
           at::ones({batch, image_len},
                    at::TensorOptions().dtype(at::kBool).device(device))},
          1);
  }

  Modulation modulation;
  modulation.noisy_tokens = noisy_tokens;
  modulation.temb = timestep_embedding(input.timestep.to(device));
  if (config_.zero_cond_t && !input.references.empty())
    modulation.temb_zero =
        timestep_embedding(at::zeros_like(input.timestep, device));

  {
    const Rope positions = rope(grids, text_len);
    for (int64_t l = 0; l < config_.num_layers; ++l)
      block(img, txt, "transformer_blocks." + std::to_string(l), positions,
            key_mask, modulation);
  }
  txt.reset();

  // norm_out (scale first, then shift) and proj_out are per token: only the
  // noisy latent's tokens are needed.
  const int64_t dim = config_.inner_dim();
  const auto emb = linear(at::silu(modulation.temb), "norm_out.linear")
                       .unsqueeze(1)
                       .chunk(2, 2);
  img =
      at::layer_norm(img.narrow(1, 0, noisy_tokens), {dim}, {}, {}, kNormEps) *
          (1 + emb[0]) +
      emb[1];
  img = linear(img, "proj_out");
  return unpack_latents(img, height, width);
}

at::Tensor pack_latents(const at::Tensor& latents) {
  const int64_t b = latents.size(0), c = latents.size(1);
  const int64_t h = latents.size(2) / 2, w = latents.size(3) / 2;
  return latents.view({b, c, h, 2, w, 2})
      .permute({0, 2, 4, 1, 3, 5})
      .reshape({b, h * w, c * 4});
}

at::Tensor unpack_latents(const at::Tensor& tokens, int64_t height,
                          int64_t width) {
  const int64_t b = tokens.size(0), c = tokens.size(2) / 4;
  return tokens.view({b, height / 2, width / 2, c, 2, 2})
      .permute({0, 3, 1, 4, 2, 5})
      .reshape({b, c, height, width});
}

std::unique_ptr<mold::Denoiser> make_qwen_image_transformer(
    const mold::ArchSpec& arch) {
  return std::make_unique<QwenImageTransformer>(
      mold::config_for_arch<QwenImageTransformerConfig>(
          arch, "the qwen_image transformer"),
      arch.describe());
}

}  // namespace qwen_image
