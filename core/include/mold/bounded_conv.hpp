#pragma once
/// 2-D convolution whose temporary memory stays under a bound: the output rows
/// are computed in bands, each from its slab of input rows (with the halo
/// d*(k-1) the kernel reaches), zero padding only at the true top and bottom
/// borders. The result is the plain convolution's (the same sums, per output
/// element).

#include <ATen/ATen.h>

#include "mold/bytes.hpp"

namespace mold {

/// The default bound on a convolution's temporary memory.
inline constexpr Bytes kDefaultConvWorkspace = 64 * kMiB;

/// Geometry of one convolution call.
struct Conv2dShape {
  int64_t batch, in_channels, in_height, in_width;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  int64_t element_size;

  int64_t out_height() const;
  int64_t out_width() const;
  /// Temporary bytes a band of `rows` output rows needs, as the im2col path
  /// allocates them: the padded input slab, the column matrix and the band's
  /// output.
  Bytes band_workspace(int64_t rows) const;
};

/// Conv2dShape of at::conv2d(input, weight, ..., stride, padding, dilation,
/// groups).
Conv2dShape conv2d_shape(const at::Tensor& input, const at::Tensor& weight,
                         at::IntArrayRef stride, at::IntArrayRef padding,
                         at::IntArrayRef dilation, int64_t groups);

/// Output rows per band so that band_workspace(rows) <= `bound` (at least 1);
/// the whole height when everything fits.
int64_t rows_per_band(const Conv2dShape& shape, Bytes bound);

/// at::conv2d with the same arguments, in bands of rows_per_band(shape, bound)
/// output rows; one plain call when the whole convolution fits the bound.
/// `input` is NCHW.
at::Tensor bounded_conv2d(const at::Tensor& input, const at::Tensor& weight,
                          const at::Tensor& bias, at::IntArrayRef stride,
                          at::IntArrayRef padding, at::IntArrayRef dilation,
                          int64_t groups, Bytes bound = kDefaultConvWorkspace);

}  // namespace mold
