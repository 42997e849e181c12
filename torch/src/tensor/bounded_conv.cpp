#include "mold/tensor/bounded_conv.hpp"

#include <algorithm>
#include <vector>

#include "mold/base/error.hpp"

namespace mold {

namespace {
int64_t at_or(at::IntArrayRef values, std::size_t i) {
  return values.size() == 1 ? values[0] : values[i];
}
}  // namespace

Conv2dShape conv2d_shape(const at::Tensor& input, const at::Tensor& weight,
                         at::IntArrayRef stride, at::IntArrayRef padding,
                         at::IntArrayRef dilation, int64_t groups) {
  if (input.dim() != 4 || weight.dim() != 4)
    throw InvalidArgument(
        "bounded_conv2d takes a 4-D NCHW input and a 4-D weight, got " +
        std::to_string(input.dim()) + "-D and " + std::to_string(weight.dim()) +
        "-D");
  return Conv2dShape{input.size(0),
                     input.size(1),
                     input.size(2),
                     input.size(3),
                     weight.size(0),
                     weight.size(2),
                     weight.size(3),
                     at_or(stride, 0),
                     at_or(stride, 1),
                     at_or(padding, 0),
                     at_or(padding, 1),
                     at_or(dilation, 0),
                     at_or(dilation, 1),
                     groups,
                     int64_t(input.element_size())};
}

at::Tensor bounded_conv2d(const at::Tensor& input, const at::Tensor& weight,
                          const at::Tensor& bias, at::IntArrayRef stride,
                          at::IntArrayRef padding, at::IntArrayRef dilation,
                          int64_t groups, Bytes bound) {
  const Conv2dShape s =
      conv2d_shape(input, weight, stride, padding, dilation, groups);
  const int64_t out_h = s.out_height();
  const int64_t band = rows_per_band(s, bound);
  if (band >= out_h)
    return at::conv2d(input, weight, bias, stride, padding, dilation, groups);

  at::Tensor output = at::empty({s.batch, s.out_channels, out_h, s.out_width()},
                                input.options());
  const int64_t reach = s.dilation_h * (s.kernel_h - 1);
  for (int64_t r0 = 0; r0 < out_h; r0 += band) {
    const int64_t rows = std::min(band, out_h - r0);
    // Input rows this band reads, in padded coordinates shifted back to the
    // input's.
    const int64_t first = r0 * s.stride_h - s.pad_h;
    const int64_t last =
        (r0 + rows - 1) * s.stride_h - s.pad_h + reach;  // inclusive
    const int64_t from = std::max<int64_t>(first, 0);
    const int64_t to = std::min<int64_t>(last + 1, s.in_height);
    at::Tensor slab = input.narrow(2, from, to - from);
    const int64_t pad_top = from - first, pad_bottom = last + 1 - to;
    if (pad_top > 0 || pad_bottom > 0)  // zeros only beyond the true borders
      slab = at::constant_pad_nd(slab, {0, 0, pad_top, pad_bottom}, 0);
    const std::vector<int64_t> band_stride{s.stride_h, s.stride_w},
        band_padding{0, s.pad_w}, band_dilation{s.dilation_h, s.dilation_w};
    at::Tensor part = at::conv2d(slab, weight, bias, band_stride, band_padding,
                                 band_dilation, groups);
    output.narrow(2, r0, rows).copy_(part);
  }
  return output;
}

}  // namespace mold
