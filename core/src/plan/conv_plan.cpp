#include "mold/plan/conv_plan.hpp"

namespace mold {

int64_t Conv2dShape::out_height() const {
  return (in_height + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h +
         1;
}

int64_t Conv2dShape::out_width() const {
  return (in_width + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w +
         1;
}

Bytes Conv2dShape::band_workspace(int64_t rows) const {
  const int64_t slab_rows =
      (rows - 1) * stride_h + dilation_h * (kernel_h - 1) + 1;
  const int64_t slab = batch * in_channels * slab_rows * (in_width + 2 * pad_w);
  const int64_t columns =
      batch * (in_channels / groups) * kernel_h * kernel_w * rows * out_width();
  const int64_t output = batch * out_channels * rows * out_width();
  return Bytes(slab + columns + output) * Bytes(element_size);
}

int64_t rows_per_band(const Conv2dShape& shape, Bytes bound) {
  const int64_t height = shape.out_height();
  if (shape.band_workspace(height) <= bound) return height;
  int64_t low = 1,
          high = height;  // the largest rows with band_workspace(rows) <= bound
  while (low < high) {
    const int64_t mid = (low + high + 1) / 2;
    if (shape.band_workspace(mid) <= bound)
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

}  // namespace mold
