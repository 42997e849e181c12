#include "zimage_transformer.hpp"

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

namespace zimage {

using mold::ConfigError;
using mold::DenoiserInput;
using mold::InvalidArgument;
using mold::JsonConfig;

namespace {

constexpr int64_t kAdalnEmbedDim = 256;  // ADALN_EMBED_DIM
constexpr int64_t kSeqMultiple = 32;     // SEQ_MULTI_OF
constexpr int64_t kFrequencyDim =
    ZImageTransformerConfig::timestep_frequency_dim;
constexpr int64_t kTimestepMid = ZImageTransformerConfig::timestep_hidden;
constexpr double kMaxPeriod = 10000.0;  // of the timestep sinusoids
constexpr double kFinalNormEps = 1e-6;  // the final LayerNorm
constexpr double kQkNormEps = 1e-5;     // norm_q / norm_k (fixed, not norm_eps)

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

std::string patch_key(int64_t patch, int64_t f_patch) {
  return std::to_string(patch) + "-" + std::to_string(f_patch);
}

}  // namespace

struct ZImageTransformer::Rope {
  at::Tensor cos;  // (B, S, 1, head_dim / 2), float32
  at::Tensor sin;
};

ZImageTransformer::ZImageTransformer(const ZImageTransformerConfig& config,
                                     std::string arch)
    : config_(config), arch_(std::move(arch)) {
  const auto& c = config_;
  const int64_t dim = c.dim;
  for (const auto& [patch, f_patch] : c.patch_sizes) {
    const std::string key = patch_key(patch, f_patch);
    const int64_t patch_dim = f_patch * patch * patch * c.in_channels;
    add("all_x_embedder." + key + ".weight", {dim, patch_dim});
    add("all_x_embedder." + key + ".bias", {dim});
    const std::string final_layer = "all_final_layer." + key;
    add(final_layer + ".linear.weight", {patch_dim, dim});
    add(final_layer + ".linear.bias", {patch_dim});
    add(final_layer + ".adaLN_modulation.1.weight", {dim, c.adaln_dim()});
    add(final_layer + ".adaLN_modulation.1.bias", {dim});
  }
  for (int64_t i = 0; i < c.n_refiner_layers; ++i) {
    declare_block("noise_refiner." + std::to_string(i), true);
    declare_block("context_refiner." + std::to_string(i), false);
  }
  for (int64_t i = 0; i < c.n_layers; ++i)
    declare_block("layers." + std::to_string(i), true);
  add("t_embedder.mlp.0.weight", {kTimestepMid, kFrequencyDim});
  add("t_embedder.mlp.0.bias", {kTimestepMid});
  add("t_embedder.mlp.2.weight", {c.adaln_dim(), kTimestepMid});
  add("t_embedder.mlp.2.bias", {c.adaln_dim()});
  add("cap_embedder.0.weight", {c.cap_feat_dim});
  add("cap_embedder.1.weight", {dim, c.cap_feat_dim});
  add("cap_embedder.1.bias", {dim});
  add("x_pad_token", {1, dim});
  add("cap_pad_token", {1, dim});
}

void ZImageTransformer::declare_block(const std::string& prefix,
                                      bool modulation) {
  const int64_t dim = config_.dim;
  for (const char* proj : {"to_q", "to_k", "to_v", "to_out.0"})
    add(prefix + ".attention." + proj + ".weight", {dim, dim});
  if (config_.qk_norm) {
    add(prefix + ".attention.norm_q.weight", {config_.head_dim()});
    add(prefix + ".attention.norm_k.weight", {config_.head_dim()});
  }
  add(prefix + ".feed_forward.w1.weight", {config_.ffn_dim(), dim});
  add(prefix + ".feed_forward.w2.weight", {dim, config_.ffn_dim()});
  add(prefix + ".feed_forward.w3.weight", {config_.ffn_dim(), dim});
  for (const char* norm :
       {"attention_norm1", "ffn_norm1", "attention_norm2", "ffn_norm2"})
    add(prefix + "." + norm + ".weight", {dim});
  if (modulation) {
    add(prefix + ".adaLN_modulation.0.weight", {4 * dim, config_.adaln_dim()});
    add(prefix + ".adaLN_modulation.0.bias", {4 * dim});
  }
}

std::string ZImageTransformer::describe() const {
  return "zimage transformer (" + arch_ + ")";
}

at::Tensor ZImageTransformer::linear(const at::Tensor& x,
                                     const std::string& prefix,
                                     bool bias) const {
  // A quantized matrix (a GGUF or fp8 file) is dequantized here for this
  // product only, or for a few rows multiplied from its blocks.
  return linear_with(x, prefix + ".weight",
                     bias ? p(prefix + ".bias") : at::Tensor());
}

at::Tensor ZImageTransformer::rms_norm(const at::Tensor& x,
                                       const std::string& weight,
                                       double eps) const {
  return mold::diffusers_rms_norm(x, p(weight), eps);
}

ZImageTransformer::Rope ZImageTransformer::rope(
    const at::Tensor& positions) const {
  // positions: (B, S, 3) int64 on the host. Angle = position * theta^(-2j/d)
  // in float64, cast to float32, as the reference's table; cos and sin of the
  // float32 angle.
  const at::Tensor pos = positions.to(at::kDouble);
  std::vector<at::Tensor> angles;
  for (std::size_t a = 0; a < config_.axes_dims.size(); ++a) {
    const int64_t d = config_.axes_dims[a];
    const at::Tensor exponent = at::arange(0, d, 2, at::kDouble) / double(d);
    const at::Tensor freqs = 1.0 / at::pow(config_.rope_theta, exponent);
    angles.push_back(pos.select(-1, int64_t(a)).unsqueeze(-1) * freqs);
  }
  const at::Tensor angle = at::cat(angles, -1).to(at::kFloat);
  const auto device = this->device();
  return Rope{angle.cos().unsqueeze(2).to(device),
              angle.sin().unsqueeze(2).to(device)};
}

at::Tensor ZImageTransformer::attention(const at::Tensor& x,
                                        const std::string& prefix,
                                        const Rope& rope,
                                        const at::Tensor& key_mask) const {
  const int64_t batch = x.size(0), seq = x.size(1);
  const int64_t heads = config_.n_heads, head_dim = config_.head_dim();
  const auto project = [&](const char* name, const char* norm) {
    at::Tensor t = linear(x, prefix + "." + name, false)
                       .view({batch, seq, heads, head_dim});
    if (config_.qk_norm) t = rms_norm(t, prefix + "." + norm, kQkNormEps);
    return t;
  };
  // (B, H, S, Dh), contiguous, so that every chunk's matmuls take them as
  // they are; q carries the 1/sqrt(Dh) of the scores.
  const at::Tensor q = mold::rotate_interleaved_pairs(
                           project("to_q", "norm_q.weight"), rope.cos, rope.sin)
                           .mul_(1.0 / std::sqrt(double(head_dim)))
                           .permute({0, 2, 1, 3})
                           .contiguous();
  const at::Tensor k_t =
      mold::rotate_interleaved_pairs(project("to_k", "norm_k.weight"), rope.cos,
                                     rope.sin)
          .permute({0, 2, 1, 3})
          .contiguous()
          .transpose(2, 3);  // (B, H, Dh, S)
  const at::Tensor v = linear(x, prefix + ".to_v", false)
                           .view({batch, seq, heads, head_dim})
                           .permute({0, 2, 1, 3})
                           .contiguous();
  // key_mask: the keys that are batch padding.
  const at::Tensor out = mold::chunked_attention(q, k_t, v, key_mask);
  return linear(out.view({batch, seq, heads * head_dim}), prefix + ".to_out.0",
                false);
}

at::Tensor ZImageTransformer::block(at::Tensor x, const std::string& prefix,
                                    const Rope& rope,
                                    const at::Tensor& key_mask,
                                    const at::Tensor& adaln) const {
  const double eps = config_.norm_eps;
  const auto feed_forward = [&](const at::Tensor& h) {
    at::Tensor gated = linear(h, prefix + ".feed_forward.w1", false);
    at::silu_(gated);
    gated.mul_(linear(h, prefix + ".feed_forward.w3", false));
    return linear(gated, prefix + ".feed_forward.w2", false);
  };
  const auto norm = [&](const at::Tensor& h, const char* name) {
    return rms_norm(h, prefix + "." + name + ".weight", eps);
  };
  if (!adaln.defined()) {
    x.add_(norm(attention(norm(x, "attention_norm1"), prefix + ".attention",
                          rope, key_mask),
                "attention_norm2"));
    x.add_(norm(feed_forward(norm(x, "ffn_norm1")), "ffn_norm2"));
    return x;
  }
  // (B, 1, 4 dim): scale_msa, gate_msa, scale_mlp, gate_mlp.
  const auto mod = linear(adaln, prefix + ".adaLN_modulation.0", true)
                       .unsqueeze(1)
                       .chunk(4, 2);
  at::Tensor h = attention(norm(x, "attention_norm1").mul_(mod[0] + 1.0),
                           prefix + ".attention", rope, key_mask);
  x.add_(norm(h, "attention_norm2").mul_(mod[1].tanh()));
  h = feed_forward(norm(x, "ffn_norm1").mul_(mod[2] + 1.0));
  x.add_(norm(h, "ffn_norm2").mul_(mod[3].tanh()));
  return x;
}

at::Tensor ZImageTransformer::timestep_embedding(const at::Tensor& t) const {
  // The sinusoids in float32 (cos first), as the reference, then the MLP in
  // the parameters' dtype.
  const at::Tensor freqs =
      mold::timestep_frequencies(kFrequencyDim, kMaxPeriod, t.device());
  const at::Tensor args =
      (t.to(at::kFloat) * config_.t_scale).unsqueeze(1) * freqs.unsqueeze(0);
  at::Tensor h = mold::cos_then_sin(args).to(dtype());
  h = at::silu(linear(h, "t_embedder.mlp.0", true));
  return linear(h, "t_embedder.mlp.2", true);
}

void ZImageTransformer::check_input(const DenoiserInput& in) const {
  const auto fail = [](const std::string& field, const at::Tensor& t,
                       const std::string& expected) {
    refuse_input("zimage transformer", field, t, expected);
  };
  const int64_t c = config_.in_channels;
  const std::string latent_shape = "(B, " + std::to_string(c) +
                                   ", H, W) floating point with H and W "
                                   "positive multiples of 2";
  if (!in.latents.defined() || in.latents.dim() != 4 ||
      !c10::isFloatingType(in.latents.scalar_type()) ||
      in.latents.size(1) != c || in.latents.size(0) < 1 ||
      in.latents.size(2) < 2 || in.latents.size(3) < 2 ||
      in.latents.size(2) % 2 != 0 || in.latents.size(3) % 2 != 0)
    fail("latents", in.latents, latent_shape);
  const int64_t b = in.latents.size(0);
  check_conditioning("zimage transformer", in, b);
}

at::Tensor ZImageTransformer::forward(const DenoiserInput& input) const {
  check_input(input);
  at::NoGradGuard no_grad;
  const WeightBufferRelease release{*this};
  const auto device = this->device();
  const auto dtype = this->dtype();
  const int64_t batch = input.latents.size(0), channels = config_.in_channels;
  const int64_t height = input.latents.size(2), width = input.latents.size(3);
  const int64_t dim = config_.dim, patch = 2;
  const std::string key = patch_key(patch, 1);
  const int64_t rows = height / patch, cols = width / patch;
  const int64_t tokens = rows * cols;  // one frame
  const int64_t image_len = round_up(tokens, kSeqMultiple);

  // Caption lengths: valid tokens, padded to the multiple with cap_pad_token.
  const at::Tensor mask_host = input.text_mask.to(at::kCPU).ne(0);
  const at::Tensor counts_t = mask_host.sum(1).to(at::kLong).contiguous();
  std::vector<int64_t> counts(counts_t.data_ptr<int64_t>(),
                              counts_t.data_ptr<int64_t>() + batch);
  std::vector<int64_t> cap_lens(batch);
  for (int64_t i = 0; i < batch; ++i) {
    if (counts[i] == 0)
      throw InvalidArgument(
          "zimage transformer: text_mask row " + std::to_string(i) +
          " has no true entry; expected at least one valid caption token per "
          "latent");
    cap_lens[i] = round_up(counts[i], kSeqMultiple);
  }
  const int64_t cap_max = *std::max_element(cap_lens.begin(), cap_lens.end());
  const auto& lens = config_.axes_lens;
  if (cap_max + 1 >= lens[0])
    throw InvalidArgument(
        "zimage transformer: text has up to " +
        std::to_string(*std::max_element(counts.begin(), counts.end())) +
        " valid tokens, padded to " + std::to_string(cap_max) +
        "; the image then sits at position " + std::to_string(cap_max + 1) +
        " of the first RoPE axis, which has " + std::to_string(lens[0]) +
        " (axes_lens[0]); expected fewer caption tokens");
  if (rows >= lens[1] || cols >= lens[2])
    throw InvalidArgument(
        "zimage transformer: latents are " + shape_of(input.latents) + ", " +
        std::to_string(rows) + "x" + std::to_string(cols) +
        " patches; expected fewer than " + std::to_string(lens[1]) + "x" +
        std::to_string(lens[2]) + " (axes_lens[1], axes_lens[2])");

  // Positions (frame or caption index, row, column); padding at (0, 0, 0).
  at::Tensor image_pos = at::zeros({batch, image_len, 3}, at::kLong);
  at::Tensor cap_pos = at::zeros({batch, cap_max, 3}, at::kLong);
  {
    const at::Tensor grid_rows =
        at::arange(rows, at::kLong).repeat_interleave(cols);
    const at::Tensor grid_cols = at::arange(cols, at::kLong).repeat({rows});
    for (int64_t i = 0; i < batch; ++i) {
      at::Tensor img = image_pos[i].narrow(0, 0, tokens);
      img.select(1, 0).fill_(cap_lens[i] + 1);
      img.select(1, 1).copy_(grid_rows);
      img.select(1, 2).copy_(grid_cols);
      // Caption pad tokens continue the count (1 .. padded length).
      cap_pos[i]
          .narrow(0, 0, cap_lens[i])
          .select(1, 0)
          .copy_(at::arange(1, cap_lens[i] + 1, at::kLong));
    }
  }
  // Keys to ignore: only the batch padding of shorter captions.
  at::Tensor cap_keys, unified_keys;
  if (std::any_of(cap_lens.begin(), cap_lens.end(),
                  [&](int64_t n) { return n != cap_max; })) {
    const at::Tensor lengths = at::tensor(cap_lens, at::kLong).unsqueeze(1);
    const at::Tensor keys =
        at::arange(cap_max, at::kLong).unsqueeze(0) < lengths;
    unified_keys =
        at::cat({at::ones({batch, image_len}, at::kBool), keys}, 1).to(device);
    cap_keys = keys.to(device);
  }

  const at::Tensor adaln = timestep_embedding(input.timestep.to(device));

  // Image tokens: (B, C, 1, H, W) -> (B, T, pF*pH*pW*C), embedded, padded.
  at::Tensor x = input.latents.to(device, dtype)
                     .view({batch, channels, rows, patch, cols, patch})
                     .permute({0, 2, 4, 3, 5, 1})
                     .reshape({batch, tokens, patch * patch * channels});
  x = linear(x, "all_x_embedder." + key, true);
  if (image_len > tokens)
    x = at::cat({x, p("x_pad_token").expand({batch, image_len - tokens, dim})},
                1);
  {
    const Rope image_rope = rope(image_pos);
    for (int64_t l = 0; l < config_.n_refiner_layers; ++l)
      x = block(std::move(x), "noise_refiner." + std::to_string(l), image_rope,
                at::Tensor(), adaln);
  }

  // Caption tokens: the valid rows of each item, embedded, padded.
  at::Tensor cap;
  {
    const at::Tensor selected =
        input.text.to(device, dtype).index({mask_host.to(device)});
    const at::Tensor embedded =
        linear(rms_norm(selected, "cap_embedder.0.weight", config_.norm_eps),
               "cap_embedder.1", true);
    std::vector<at::Tensor> items;
    int64_t offset = 0;
    for (int64_t i = 0; i < batch; ++i) {
      // Built with reserve + push_back: GCC 12 warns (-Warray-bounds, a false
      // positive) when a one-element initializer list is grown.
      std::vector<at::Tensor> parts;
      parts.reserve(3);
      parts.push_back(embedded.narrow(0, offset, counts[i]));
      offset += counts[i];
      if (cap_lens[i] > counts[i])
        parts.push_back(
            p("cap_pad_token").expand({cap_lens[i] - counts[i], dim}));
      if (cap_max > cap_lens[i])
        parts.push_back(
            at::zeros({cap_max - cap_lens[i], dim}, embedded.options()));
      items.push_back(at::cat(parts, 0));
    }
    cap = at::stack(items, 0);
  }
  {
    const Rope cap_rope = rope(cap_pos);
    for (int64_t l = 0; l < config_.n_refiner_layers; ++l)
      cap = block(std::move(cap), "context_refiner." + std::to_string(l),
                  cap_rope, cap_keys, at::Tensor());
  }

  // One sequence per item: [image, caption], the batch padding last.
  x = at::cat({x, cap}, 1);
  cap.reset();
  {
    const Rope unified_rope = rope(at::cat({image_pos, cap_pos}, 1));
    for (int64_t l = 0; l < config_.n_layers; ++l)
      x = block(std::move(x), "layers." + std::to_string(l), unified_rope,
                unified_keys, adaln);
  }

  // Final layer on the image tokens only (it is per token), unpatchify.
  const std::string final_layer = "all_final_layer." + key;
  const at::Tensor scale =
      linear(at::silu(adaln), final_layer + ".adaLN_modulation.1", true) + 1.0;
  x = at::layer_norm(x.narrow(1, 0, tokens), {dim}, {}, {}, kFinalNormEps)
          .mul_(scale.unsqueeze(1));
  x = linear(x, final_layer + ".linear", true);
  return x.view({batch, rows, cols, patch, patch, channels})
      .permute({0, 5, 1, 3, 2, 4})
      .reshape({batch, channels, height, width});
}

std::unique_ptr<mold::Denoiser> make_zimage_transformer(
    const mold::ArchSpec& arch) {
  return std::make_unique<ZImageTransformer>(
      mold::config_for_arch<ZImageTransformerConfig>(arch,
                                                     "the zimage transformer"),
      arch.describe());
}

}  // namespace zimage
