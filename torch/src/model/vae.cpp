#include "mold/model/vae.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mold/base/error.hpp"
#include "mold/tensor/safetensors.hpp"

namespace mold {

int64_t Vae::spatial_multiple(VaeInput kind) const {
  return kind == VaeInput::image ? spatial_scale() : 1;
}

void Vae::check_input(VaeInput kind, const at::Tensor& input,
                      std::string_view name) const {
  const bool image = kind == VaeInput::image;
  const std::string what =
      name.empty() ? (image ? "the image" : "the latent") : std::string(name);
  const char* noun = image ? "image" : "latent";
  const int64_t channels = image ? 3 : latent_channels();
  const int64_t multiple = std::max<int64_t>(1, spatial_multiple(kind));
  const std::string expected = fmt::format(
      "({}, {}, {}) with N >= 1 and {} {}", "N", channels,
      image ? "H, W" : "h, w", image ? "H, W" : "h, w",
      multiple > 1 ? fmt::format("positive multiples of {}", multiple)
                   : std::string(">= 1"));
  const std::string takes =
      fmt::format("the {} VAE ({}) {} {}s of shape {}", family(), arch_,
                  image ? "encodes" : "decodes", noun, expected);
  if (!input.defined())
    throw InvalidArgument(
        fmt::format("{} is not a tensor: {}; give one", what, takes));
  const std::string shape = c10::str(input.sizes());
  auto refuse = [&](const std::string& problem) {
    throw InvalidArgument(fmt::format("{} has shape {}, but {}: {}", what,
                                      shape, takes, problem));
  };
  if (input.dim() != 4)
    refuse(
        fmt::format("it has {} dimensions; give an NCHW tensor", input.dim()));
  if (input.size(0) == 0)
    refuse(fmt::format("the batch is 0; give at least one {}", noun));
  if (input.size(1) != channels)
    refuse(image ? fmt::format("{} channels, not 3; give RGB images",
                               input.size(1))
                 : fmt::format("{} channels, not {}; give a latent of a {} "
                               "VAE ({} channels)",
                               input.size(1), channels, family(), channels));
  const int64_t h = input.size(2), w = input.size(3);
  if (h == 0 || w == 0)
    refuse(fmt::format("{} {}x{} is empty; give at least {}x{}", noun, h, w,
                       multiple, multiple));
  if (h % multiple || w % multiple) {
    auto down = [&](int64_t v) { return v / multiple * multiple; };
    auto up = [&](int64_t v) {
      return (v + multiple - 1) / multiple * multiple;
    };
    const std::string crop =
        down(h) > 0 && down(w) > 0
            ? fmt::format("crop it to {}x{} or ", down(h), down(w))
            : std::string();
    refuse(fmt::format("{}x{} is not a multiple of {}; {}pad it to {}x{}", h, w,
                       multiple, crop, up(h), up(w)));
  }
  if (!parameters().empty() && materialized()) {
    const at::ScalarType weights = dtype();
    if (input.scalar_type() != weights)
      refuse(fmt::format("its dtype is {}, the weights' {}; cast it to {}",
                         c10::toString(input.scalar_type()),
                         c10::toString(weights), c10::toString(weights)));
  }
}

std::string Vae::describe() const {
  return fmt::format("{} VAE ({})", family(), arch_);
}

at::Tensor Vae::conv(const at::Tensor& x, const at::Tensor& weight,
                     const at::Tensor& bias, int64_t stride, int64_t padding,
                     const VaeRunOptions& options) const {
  if (options.bounded)
    return bounded_conv2d(x, weight, bias, {stride, stride}, {padding, padding},
                          {1, 1}, 1, options.workspace_bound);
  if (weight.size(2) == 1 && weight.size(3) == 1 && stride == 1 &&
      padding == 0 && x.dim() == 4)
    return pointwise_conv(x, weight, bias);
  return at::conv2d(x, weight, bias, {stride, stride}, {padding, padding});
}

at::Tensor Vae::pointwise_conv(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias) {
  // A 1x1 convolution is a product over the channels. libtorch's cpu
  // convolution of a half-precision input takes a float32 buffer of the
  // whole output per thread for it (Debian's 1.13: 512 bytes a pixel per
  // thread at 128 channels), so that a decode's memory grew with the
  // threads; the product takes the output alone.
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t out_channels = weight.size(0);
  at::Tensor out =
      at::matmul(weight.view({out_channels, c}), x.reshape({b, c, h * w}));
  if (bias.defined()) out.add_(bias.view({1, out_channels, 1}));
  return out.view({b, out_channels, h, w});
}

at::Tensor Vae::attention(const at::Tensor& q, const at::Tensor& k,
                          const at::Tensor& v, const VaeRunOptions& options) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const at::Tensor kt = k.transpose(-2, -1);
  const int64_t n = q.size(-2);
  int64_t chunk = n;
  if (options.bounded) {
    // Scores of one chunk: batch x chunk x n floats, twice (scores and
    // softmax).
    const Bytes per_row = Bytes(q.size(0)) * Bytes(n) * 4 * 2;
    chunk = std::max<int64_t>(
        1, int64_t(options.workspace_bound / std::max<Bytes>(per_row, 1)));
  }
  // Scores scaled in place and dropped once softmaxed: two n x n buffers
  // live at once, not three (the product, its scaled copy, the softmax).
  auto attend = [&](const at::Tensor& queries) {
    at::Tensor scores = at::matmul(queries, kt);
    scores.mul_(scale);
    scores = at::softmax(scores, -1);
    return scores.matmul(v);
  };
  if (chunk >= n) return attend(q);
  at::Tensor out = at::empty_like(q);
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t rows = std::min(chunk, n - start);
    out.narrow(-2, start, rows).copy_(attend(q.narrow(-2, start, rows)));
  }
  return out;
}

at::Tensor Vae::downsample(const at::Tensor& x, const std::string& prefix,
                           const VaeRunOptions& options) const {
  const at::Tensor padded = at::constant_pad_nd(x, {0, 1, 0, 1}, 0);
  return conv(padded, p(prefix + ".weight"), p(prefix + ".bias"), 2, 0,
              options);
}

at::Tensor Vae::upsample(const at::Tensor& x, const std::string& prefix,
                         const VaeRunOptions& options) const {
  const at::Tensor up =
      at::upsample_nearest2d(x, {x.size(2) * 2, x.size(3) * 2});
  return conv(up, p(prefix + ".weight"), p(prefix + ".bias"), 1, 1, options);
}

}  // namespace mold
