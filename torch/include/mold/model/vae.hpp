#pragma once
/// Image autoencoders (VAEs): the common interface, parameters under their
/// checkpoint names, and the building blocks the families' architectures share.

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mold/model/module.hpp"
#include "mold/tensor/bounded_conv.hpp"

namespace mold {

/// How to run: every convolution plain, or in bands under a workspace bound
/// (exact), and attention over all queries at once or in chunks under the same
/// bound (exact).
struct VaeRunOptions {
  bool bounded = false;
  Bytes workspace_bound = kDefaultConvWorkspace;
};

/// What a VAE takes: an image to encode or a latent to decode.
enum class VaeInput { image, latent };

/// A VAE. Images are NCHW float in [-1, 1]; latents are NCHW with
/// latent_channels(), spatial_scale() times smaller. encode() returns the
/// distribution's mode (mean) in the model's own latent space; scale_latent()
/// maps it to the space diffusion pipelines use (and unscale_latent() back,
/// before decode()).
class Vae : public Module {
 public:
  virtual std::string family() const = 0;
  /// "default" (the published architecture) or "tiny" (for tests and CPU runs).
  const std::string& arch() const { return arch_; }
  virtual int latent_channels() const { return 16; }
  virtual int spatial_scale() const { return 8; }

  /// How many times H and W of an input must be divisible (1: any size):
  /// spatial_scale() for an image (each downsampling halves it exactly), 1 for
  /// a latent. An architecture that needs more overrides it.
  virtual int64_t spatial_multiple(VaeInput kind) const;
  /// Throws InvalidArgument unless `input` is what encode() (kind image) or
  /// decode() (kind latent) takes: 4-D NCHW, batch at least 1, 3 channels for
  /// an image and latent_channels() for a latent, H and W at least 1 and
  /// multiples of spatial_multiple(kind). The message names `name` (e.g.
  /// "x.safetensors: tensor 'latent'"; empty: "the image" or "the latent"), the
  /// shape it has and the shape expected. Shapes only: values are not read.
  /// Both families' encode() and decode() call it first.
  void check_input(VaeInput kind, const at::Tensor& input,
                   std::string_view name = {}) const;

  virtual at::Tensor encode(const at::Tensor& image,
                            const VaeRunOptions& options) const = 0;
  virtual at::Tensor decode(const at::Tensor& latent,
                            const VaeRunOptions& options) const = 0;
  virtual at::Tensor scale_latent(const at::Tensor& latent) const = 0;
  virtual at::Tensor unscale_latent(const at::Tensor& latent) const = 0;

  /// "zimage VAE (tiny)".
  std::string describe() const override;

 protected:
  explicit Vae(std::string arch) : arch_(std::move(arch)) {}

  /// conv2d, plain or bounded per `options`; a plain 1x1 one as
  /// pointwise_conv.
  at::Tensor conv(const at::Tensor& x, const at::Tensor& weight,
                  const at::Tensor& bias, int64_t stride, int64_t padding,
                  const VaeRunOptions& options) const;
  /// A 1x1 stride-1 convolution of (B, C, H, W) as a product over the
  /// channels: no per-thread buffer of the output.
  static at::Tensor pointwise_conv(const at::Tensor& x,
                                   const at::Tensor& weight,
                                   const at::Tensor& bias);
  /// Single-head attention over (B, N, C) tokens, softmax(q k^T / sqrt(C)) v,
  /// in query chunks when bounded.
  static at::Tensor attention(const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v,
                              const VaeRunOptions& options);
  /// Pads right and bottom by one, then a 3x3 stride-2 convolution (both
  /// families' downsampling).
  at::Tensor downsample(const at::Tensor& x, const std::string& conv_prefix,
                        const VaeRunOptions& options) const;
  /// Nearest-neighbour x2, then a 3x3 convolution (both families' upsampling).
  at::Tensor upsample(const at::Tensor& x, const std::string& conv_prefix,
                      const VaeRunOptions& options) const;

 private:
  std::string arch_;
};

}  // namespace mold
