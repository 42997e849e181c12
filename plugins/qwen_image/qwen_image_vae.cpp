#include "qwen_image_vae.hpp"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <mold/base/error.hpp>
#include <mold/estimate/arch_names.hpp>
#include <vector>

// Single images through a video VAE: every causal 3-D convolution sees its
// frame with two zero frames in front, so it is exactly a 2-D convolution with
// the kernel's last temporal slice (tests check this against the 3-D
// convolution). The temporal resampling convolutions never run for the first
// frame, so they are loaded, not used.

namespace qwen_image {

using mold::InvalidArgument;
using mold::Vae;
using mold::VaeInput;
using mold::VaeRunOptions;

namespace {

class QwenImageVae final : public Vae {
 public:
  QwenImageVae(const QwenImageVaeConfig& config, int64_t base)
      : Vae(config.arch),
        dims_{base, base, 2 * base, 4 * base, 4 * base},
        latents_mean_(config.latents_mean),
        latents_std_(config.latents_std) {
    const int64_t z = latent_channels();
    // Encoder: conv_in, then per stage two residual blocks and (but last) a
    // resample.
    causal_params("encoder.conv_in", dims_[0], 3, 3);
    int index = 0;
    for (std::size_t stage = 0; stage + 1 < dims_.size(); ++stage) {
      const int64_t in = dims_[stage], out = dims_[stage + 1];
      for (int r = 0; r < 2; ++r)
        residual_params("encoder.down_blocks." + std::to_string(index++),
                        r ? out : in, out);
      if (stage + 2 < dims_.size()) {
        const std::string block =
            "encoder.down_blocks." + std::to_string(index++);
        add(block + ".resample.1.weight", {out, out, 3, 3});
        add(block + ".resample.1.bias", {out});
        if (stage >
            0) {  // downsample3d: temporal_downsample [False, True, True]
          add(block + ".time_conv.weight", {out, out, 3, 1, 1});
          add(block + ".time_conv.bias", {out});
        }
      }
    }
    mid_params("encoder.mid_block", dims_.back());
    add("encoder.norm_out.gamma", {dims_.back(), 1, 1, 1});
    causal_params("encoder.conv_out", 2 * z, dims_.back(), 3);
    causal_params("quant_conv", 2 * z, 2 * z, 1);
    causal_params("post_quant_conv", z, z, 1);
    // Decoder: dims [4b, 4b, 4b, 2b, b]; stages after the first take half the
    // channels (the upsampler before them halves them).
    const std::vector<int64_t> d{dims_[4], dims_[4], dims_[3], dims_[2],
                                 dims_[1]};
    causal_params("decoder.conv_in", d[0], z, 3);
    mid_params("decoder.mid_block", d[0]);
    for (int i = 0; i < 4; ++i) {
      const int64_t in = i == 0 ? d[0] : d[i] / 2, out = d[i + 1];
      const std::string block = "decoder.up_blocks." + std::to_string(i);
      for (int r = 0; r < 3; ++r)
        residual_params(block + ".resnets." + std::to_string(r), r ? out : in,
                        out);
      if (i < 3) {
        add(block + ".upsamplers.0.resample.1.weight", {out / 2, out, 3, 3});
        add(block + ".upsamplers.0.resample.1.bias", {out / 2});
        if (i < 2) {  // upsample3d: temporal_upsample [True, True, False]
          add(block + ".upsamplers.0.time_conv.weight",
              {2 * out, out, 3, 1, 1});
          add(block + ".upsamplers.0.time_conv.bias", {2 * out});
        }
      }
    }
    add("decoder.norm_out.gamma", {dims_[1], 1, 1, 1});
    causal_params("decoder.conv_out", 3, dims_[1], 3);
  }

  std::string family() const override { return "qwen_image"; }

  at::Tensor encode(const at::Tensor& image,
                    const VaeRunOptions& o) const override {
    check_input(VaeInput::image, image);
    at::NoGradGuard no_grad;
    at::Tensor h = causal(image, "encoder.conv_in", o);
    int index = 0;
    for (std::size_t stage = 0; stage + 1 < dims_.size(); ++stage) {
      for (int r = 0; r < 2; ++r)
        h = residual(h, "encoder.down_blocks." + std::to_string(index++), o);
      if (stage + 2 < dims_.size())
        h = downsample(
            h, "encoder.down_blocks." + std::to_string(index++) + ".resample.1",
            o);
    }
    h = mid(h, "encoder.mid_block", o);
    h = at::silu(rms(h, "encoder.norm_out.gamma"));
    h = causal(h, "encoder.conv_out", o);
    h = causal(h, "quant_conv", o);
    return h.narrow(1, 0, latent_channels())
        .contiguous();  // the mean; logvar follows
  }

  at::Tensor decode(const at::Tensor& latent,
                    const VaeRunOptions& o) const override {
    check_input(VaeInput::latent, latent);
    at::NoGradGuard no_grad;
    at::Tensor h = causal(latent, "post_quant_conv", o);
    h = causal(h, "decoder.conv_in", o);
    h = mid(h, "decoder.mid_block", o);
    for (int i = 0; i < 4; ++i) {
      const std::string block = "decoder.up_blocks." + std::to_string(i);
      for (int r = 0; r < 3; ++r)
        h = residual(h, block + ".resnets." + std::to_string(r), o);
      if (i < 3) h = upsample(h, block + ".upsamplers.0.resample.1", o);
    }
    h = at::silu(rms(h, "decoder.norm_out.gamma"));
    h = causal(h, "decoder.conv_out", o);
    return at::clamp(h, -1.0, 1.0);
  }

  // The statistics are per channel: a latent of another shape is refused here
  // rather than by a broadcasting error.
  at::Tensor scale_latent(const at::Tensor& z) const override {
    check_input(VaeInput::latent, z);
    return (z - stat(latents_mean_, z)) / stat(latents_std_, z);
  }
  at::Tensor unscale_latent(const at::Tensor& z) const override {
    check_input(VaeInput::latent, z);
    return z / (1.0 / stat(latents_std_, z)) +
           stat(latents_mean_, z);  // as the pipelines do
  }

 private:
  void causal_params(const std::string& prefix, int64_t out, int64_t in,
                     int64_t k) {
    add(prefix + ".weight", {out, in, k, k, k});
    add(prefix + ".bias", {out});
  }
  void residual_params(const std::string& prefix, int64_t in, int64_t out) {
    add(prefix + ".norm1.gamma", {in, 1, 1, 1});
    causal_params(prefix + ".conv1", out, in, 3);
    add(prefix + ".norm2.gamma", {out, 1, 1, 1});
    causal_params(prefix + ".conv2", out, out, 3);
    if (in != out) causal_params(prefix + ".conv_shortcut", out, in, 1);
  }
  void mid_params(const std::string& prefix, int64_t c) {
    residual_params(prefix + ".resnets.0", c, c);
    const std::string attn = prefix + ".attentions.0";
    add(attn + ".norm.gamma", {c, 1, 1});
    add(attn + ".to_qkv.weight", {3 * c, c, 1, 1});
    add(attn + ".to_qkv.bias", {3 * c});
    add(attn + ".proj.weight", {c, c, 1, 1});
    add(attn + ".proj.bias", {c});
    residual_params(prefix + ".resnets.1", c, c);
  }

  static at::Tensor stat(const std::vector<float>& values,
                         const at::Tensor& like) {
    return at::tensor(values, like.options().dtype(at::kFloat))
        .view({1, -1, 1, 1})
        .to(like.options());
  }

  /// RMS_norm: x / max(||x||_channels, 1e-12) * sqrt(C) * gamma.
  at::Tensor rms(const at::Tensor& x, const std::string& gamma_name) const {
    const int64_t c = x.size(1);
    const at::Tensor norm = x.norm(2, {1}, /*keepdim=*/true).clamp_min(1e-12);
    return x / norm * std::sqrt(double(c)) * p(gamma_name).view({1, c, 1, 1});
  }

  /// A causal 3-D convolution on a single frame: the kernel's last temporal
  /// slice.
  at::Tensor causal(const at::Tensor& x, const std::string& prefix,
                    const VaeRunOptions& o) const {
    const at::Tensor& w = p(prefix + ".weight");
    const int64_t k = w.size(2);
    return conv(x, w.select(2, k - 1), p(prefix + ".bias"), 1,
                (w.size(3) - 1) / 2, o);
  }

  at::Tensor residual(const at::Tensor& x, const std::string& prefix,
                      const VaeRunOptions& o) const {
    const at::Tensor shortcut = has(prefix + ".conv_shortcut.weight")
                                    ? causal(x, prefix + ".conv_shortcut", o)
                                    : x;
    at::Tensor h =
        causal(at::silu(rms(x, prefix + ".norm1.gamma")), prefix + ".conv1", o);
    h = causal(at::silu(rms(h, prefix + ".norm2.gamma")), prefix + ".conv2", o);
    return h + shortcut;
  }

  at::Tensor attention_block(const at::Tensor& x, const std::string& prefix,
                             const VaeRunOptions& o) const {
    const int64_t b = x.size(0), c = x.size(1), hgt = x.size(2),
                  wid = x.size(3);
    const at::Tensor qkv =
        conv(rms(x, prefix + ".norm.gamma"), p(prefix + ".to_qkv.weight"),
             p(prefix + ".to_qkv.bias"), 1, 0, o);
    auto tokens = [&](int64_t i) {
      return qkv.narrow(1, i * c, c).reshape({b, c, hgt * wid}).transpose(1, 2);
    };
    at::Tensor out = attention(tokens(0), tokens(1), tokens(2), o);
    out = out.transpose(1, 2).reshape({b, c, hgt, wid});
    out = conv(out, p(prefix + ".proj.weight"), p(prefix + ".proj.bias"), 1, 0,
               o);
    return out + x;
  }

  at::Tensor mid(const at::Tensor& x, const std::string& prefix,
                 const VaeRunOptions& o) const {
    at::Tensor h = residual(x, prefix + ".resnets.0", o);
    h = attention_block(h, prefix + ".attentions.0", o);
    return residual(h, prefix + ".resnets.1", o);
  }

  std::vector<int64_t> dims_;
  std::vector<float> latents_mean_, latents_std_;  // the config's
};

}  // namespace

std::unique_ptr<Vae> declare_qwen_image_vae(const QwenImageVaeConfig& config) {
  std::unique_ptr<Vae> vae;
  if (config.arch == mold::archs::kDefault)
    vae = std::make_unique<QwenImageVae>(config, 96);
  else if (config.arch == mold::archs::kTiny)
    vae = std::make_unique<QwenImageVae>(config, 8);
  else
    throw InvalidArgument(
        "the qwen_image VAE has architectures 'default' and 'tiny', not '" +
        config.arch + "'");
  return vae;
}

std::unique_ptr<Vae> make_qwen_image_vae(const std::string& arch,
                                         std::uint64_t seed) {
  QwenImageVaeConfig config;
  config.arch = arch;
  std::unique_ptr<Vae> vae = declare_qwen_image_vae(config);
  vae->init_from_seed(seed);
  return vae;
}

}  // namespace qwen_image
