#pragma once
/// The arithmetic of a bounded 2-D convolution: how much temporary memory a
/// band of output rows needs and how many rows fit a bound. No libtorch, so
/// that planning (estimates, the recovery ladder's predictions) needs none;
/// mold/tensor/bounded_conv.hpp runs the plan.

#include <cstdint>

#include "mold/base/bytes.hpp"

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

/// Output rows per band so that band_workspace(rows) <= `bound` (at least 1);
/// the whole height when everything fits.
int64_t rows_per_band(const Conv2dShape& shape, Bytes bound);

}  // namespace mold
