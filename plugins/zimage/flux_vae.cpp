#include "flux_vae.hpp"

#include <ATen/core/grad_mode.h>

#include <mold/base/error.hpp>
#include <mold/estimate/arch_names.hpp>
#include <vector>

namespace zimage {

using mold::InvalidArgument;
using mold::Vae;
using mold::VaeInput;
using mold::VaeRunOptions;

namespace {

constexpr double kNormEps = 1e-6;

class FluxVae final : public Vae {
 public:
  FluxVae(const FluxVaeConfig& config, std::vector<int64_t> channels,
          int64_t groups)
      : Vae(config.arch),
        channels_(std::move(channels)),
        groups_(groups),
        scale_(config.scaling_factor),
        shift_(config.shift_factor) {
    const int64_t latent2 = 2 * latent_channels();
    // Encoder.
    conv_params("encoder.conv_in", channels_[0], 3, 3);
    int64_t in = channels_[0];
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const int64_t out = channels_[i];
      const std::string block = "encoder.down_blocks." + std::to_string(i);
      for (int r = 0; r < 2; ++r)
        resnet_params(block + ".resnets." + std::to_string(r), r ? out : in,
                      out);
      if (i + 1 < channels_.size())
        conv_params(block + ".downsamplers.0.conv", out, out, 3);
      in = out;
    }
    mid_params("encoder.mid_block", channels_.back());
    norm_params("encoder.conv_norm_out", channels_.back());
    conv_params("encoder.conv_out", latent2, channels_.back(), 3);
    // Decoder.
    conv_params("decoder.conv_in", channels_.back(), latent_channels(), 3);
    mid_params("decoder.mid_block", channels_.back());
    in = channels_.back();
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const int64_t out = channels_[channels_.size() - 1 - i];
      const std::string block = "decoder.up_blocks." + std::to_string(i);
      for (int r = 0; r < 3; ++r)
        resnet_params(block + ".resnets." + std::to_string(r), r ? out : in,
                      out);
      if (i + 1 < channels_.size())
        conv_params(block + ".upsamplers.0.conv", out, out, 3);
      in = out;
    }
    norm_params("decoder.conv_norm_out", channels_.front());
    conv_params("decoder.conv_out", 3, channels_.front(), 3);
  }

  std::string family() const override { return "zimage"; }

  at::Tensor encode(const at::Tensor& image,
                    const VaeRunOptions& o) const override {
    check_input(VaeInput::image, image);
    at::NoGradGuard no_grad;
    at::Tensor h = conv_named(image, "encoder.conv_in", 1, 1, o);
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const std::string block = "encoder.down_blocks." + std::to_string(i);
      for (int r = 0; r < 2; ++r)
        h = resnet(h, block + ".resnets." + std::to_string(r), o);
      if (i + 1 < channels_.size())
        h = downsample(h, block + ".downsamplers.0.conv", o);
    }
    h = mid(h, "encoder.mid_block", o);
    h = norm(h, "encoder.conv_norm_out");
    at::silu_(h);
    h = conv_named(h, "encoder.conv_out", 1, 1, o);
    return h.narrow(1, 0, latent_channels())
        .contiguous();  // the mean; logvar follows
  }

  at::Tensor decode(const at::Tensor& latent,
                    const VaeRunOptions& o) const override {
    check_input(VaeInput::latent, latent);
    at::NoGradGuard no_grad;
    at::Tensor h = conv_named(latent, "decoder.conv_in", 1, 1, o);
    h = mid(h, "decoder.mid_block", o);
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const std::string block = "decoder.up_blocks." + std::to_string(i);
      for (int r = 0; r < 3; ++r)
        h = resnet(h, block + ".resnets." + std::to_string(r), o);
      if (i + 1 < channels_.size())
        h = upsample(h, block + ".upsamplers.0.conv", o);
    }
    h = norm(h, "decoder.conv_norm_out");
    at::silu_(h);
    return conv_named(h, "decoder.conv_out", 1, 1,
                      o);  // no clamp in this model
  }

  at::Tensor scale_latent(const at::Tensor& z) const override {
    return (z - shift_) * scale_;
  }
  at::Tensor unscale_latent(const at::Tensor& z) const override {
    return z / scale_ + shift_;
  }

 private:
  void conv_params(const std::string& prefix, int64_t out, int64_t in,
                   int64_t k) {
    add(prefix + ".weight", {out, in, k, k});
    add(prefix + ".bias", {out});
  }
  void norm_params(const std::string& prefix, int64_t c) {
    add(prefix + ".weight", {c});
    add(prefix + ".bias", {c});
  }
  void resnet_params(const std::string& prefix, int64_t in, int64_t out) {
    norm_params(prefix + ".norm1", in);
    conv_params(prefix + ".conv1", out, in, 3);
    norm_params(prefix + ".norm2", out);
    conv_params(prefix + ".conv2", out, out, 3);
    if (in != out) conv_params(prefix + ".conv_shortcut", out, in, 1);
  }
  void mid_params(const std::string& prefix, int64_t c) {
    resnet_params(prefix + ".resnets.0", c, c);
    const std::string attn = prefix + ".attentions.0";
    norm_params(attn + ".group_norm", c);
    for (const char* proj : {".to_q", ".to_k", ".to_v", ".to_out.0"}) {
      add(attn + proj + ".weight", {c, c});
      add(attn + proj + ".bias", {c});
    }
    resnet_params(prefix + ".resnets.1", c, c);
  }

  at::Tensor norm(const at::Tensor& x, const std::string& prefix) const {
    return at::group_norm(x, groups_, p(prefix + ".weight"),
                          p(prefix + ".bias"), kNormEps);
  }
  at::Tensor conv_named(const at::Tensor& x, const std::string& prefix,
                        int64_t stride, int64_t padding,
                        const VaeRunOptions& o) const {
    return conv(x, p(prefix + ".weight"), p(prefix + ".bias"), stride, padding,
                o);
  }
  at::Tensor resnet(const at::Tensor& x, const std::string& prefix,
                    const VaeRunOptions& o) const {
    // Each temporary is dropped as soon as the next one exists (and SiLU
    // and the residual sum are in place), so that no more activations are
    // live at once than in diffusers' block; the arithmetic is unchanged.
    at::Tensor h = norm(x, prefix + ".norm1");
    at::silu_(h);
    h = conv_named(h, prefix + ".conv1", 1, 1, o);
    h = norm(h, prefix + ".norm2");
    at::silu_(h);
    h = conv_named(h, prefix + ".conv2", 1, 1, o);
    if (has(prefix + ".conv_shortcut.weight"))
      return conv_named(x, prefix + ".conv_shortcut", 1, 0, o).add_(h);
    return h.add_(x);
  }
  at::Tensor attention_block(const at::Tensor& x, const std::string& prefix,
                             const VaeRunOptions& o) const {
    const int64_t b = x.size(0), c = x.size(1), hgt = x.size(2),
                  wid = x.size(3);
    const at::Tensor tokens =
        norm(x, prefix + ".group_norm").view({b, c, hgt * wid}).transpose(1, 2);
    auto linear = [&](const at::Tensor& t, const std::string& name) {
      return at::linear(t, p(prefix + name + ".weight"),
                        p(prefix + name + ".bias"));
    };
    at::Tensor out = attention(linear(tokens, ".to_q"), linear(tokens, ".to_k"),
                               linear(tokens, ".to_v"), o);
    out = linear(out, ".to_out.0");
    return out.transpose(1, 2).reshape({b, c, hgt, wid}).add_(x);
  }
  at::Tensor mid(const at::Tensor& x, const std::string& prefix,
                 const VaeRunOptions& o) const {
    at::Tensor h = resnet(x, prefix + ".resnets.0", o);
    h = attention_block(h, prefix + ".attentions.0", o);
    return resnet(h, prefix + ".resnets.1", o);
  }

  std::vector<int64_t> channels_;
  int64_t groups_;
  double scale_, shift_;  // the config's scaling_factor and shift_factor
};

}  // namespace

std::unique_ptr<Vae> declare_flux_vae(const FluxVaeConfig& config) {
  std::unique_ptr<Vae> vae;
  if (config.arch == mold::archs::kDefault)
    vae = std::make_unique<FluxVae>(
        config, std::vector<int64_t>{128, 256, 512, 512}, 32);
  else if (config.arch == mold::archs::kTiny)
    vae = std::make_unique<FluxVae>(config,
                                    std::vector<int64_t>{32, 32, 64, 64}, 32);
  else
    throw InvalidArgument(
        "the zimage VAE has architectures 'default' and 'tiny', not '" +
        config.arch + "'");
  return vae;
}

std::unique_ptr<Vae> make_flux_vae(const std::string& arch,
                                   std::uint64_t seed) {
  FluxVaeConfig config;
  config.arch = arch;
  std::unique_ptr<Vae> vae = declare_flux_vae(config);
  vae->init_from_seed(seed);
  return vae;
}

}  // namespace zimage
