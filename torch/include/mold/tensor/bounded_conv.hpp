#pragma once
/// 2-D convolution whose temporary memory stays under a bound: the output rows
/// are computed in bands, each from its slab of input rows (with the halo
/// d*(k-1) the kernel reaches), zero padding only at the true top and bottom
/// borders. The result is the plain convolution's (the same sums, per output
/// element). The band arithmetic is mold/plan/conv_plan.hpp.

#include <ATen/ATen.h>

#include "mold/plan/conv_plan.hpp"

namespace mold {

/// Conv2dShape of at::conv2d(input, weight, ..., stride, padding, dilation,
/// groups).
Conv2dShape conv2d_shape(const at::Tensor& input, const at::Tensor& weight,
                         at::IntArrayRef stride, at::IntArrayRef padding,
                         at::IntArrayRef dilation, int64_t groups);

/// at::conv2d with the same arguments, in bands of rows_per_band(shape, bound)
/// output rows; one plain call when the whole convolution fits the bound.
/// `input` is NCHW.
at::Tensor bounded_conv2d(const at::Tensor& input, const at::Tensor& weight,
                          const at::Tensor& bias, at::IntArrayRef stride,
                          at::IntArrayRef padding, at::IntArrayRef dilation,
                          int64_t groups, Bytes bound = kDefaultConvWorkspace);

}  // namespace mold
