#pragma once
/// The scratch a cpu matrix product takes per compute thread, beyond its
/// inputs and output: what an estimate adds for each thread past the first.

#include <string_view>

namespace mold {

/// An upper bound of the bytes one compute thread of the cpu backend
/// allocates while it multiplies `rows` rows of `inner` elements by an
/// (outer x inner) matrix in `dtype`: the packing buffers of oneDNN's
/// bfloat16 matrix product; 0 in float32 (OpenBLAS packs into buffers of its
/// own, allocated once per process) and in other dtypes (libtorch 1.13's cpu
/// has no float16 matrix product). Measured through the cpu backend's
/// tracking allocator around at::linear on libtorch 1.13 (oneDNN 2.6), for
/// rows 1 to 16384, inner 16 to 20480, outer 512 and 3072, one thread, and
/// linear in the threads at 2 and 4, and around a batched at::matmul (the
/// attention's products: 4-32 heads, 50-320 rows, inner 8-320, at 1, 2, 4
/// and 16 threads): 128 B x inner + 768 up to inner 512, the inner
/// dimension blocked by 32 (inner 50 takes 8704 B, 68 takes 12800);
/// above, 66432 (inner to 1024) or 131968 B plus 256 B a row up to 256
/// rows; where inner is a power of two from 4096 and the rows reach 1024,
/// a copy of the input to a padded leading dimension on top: 1197056 B in
/// all at outer 512, 1721344 at outer 3072.
double cpu_matmul_thread_scratch(std::string_view dtype, double rows,
                                 double inner, double outer);

/// A matrix product of a layer: the weight is (outer x inner).
struct MatmulShape {
  double inner = 0;
  double outer = 0;
};

}  // namespace mold
