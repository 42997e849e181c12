#pragma once
/// The scratch a cpu matrix product takes per compute thread, beyond its
/// inputs and output: what an estimate adds for each thread past the first.

#include <string_view>

#include "mold/device/cpu_matmul_kernel.hpp"

namespace mold {

/// An upper bound of the bytes one compute thread of the cpu backend
/// allocates while it multiplies `rows` rows of `inner` elements by an
/// (outer x inner) matrix in `dtype`, with `kernel` (this host's by
/// default): 0 in float32 (OpenBLAS packs into buffers of its own, allocated
/// once per process) and in other dtypes (libtorch 1.13's cpu has no float16
/// matrix product). In bfloat16, oneDNN's scratch, measured through the cpu
/// backend's tracking allocator around at::linear and a batched at::matmul
/// (the attention's products) on libtorch 1.13 (oneDNN 2.6), one kernel at a
/// time (ONEDNN_MAX_CPU_ISA), as the most any of 1, 2, 4, 8 and 16 threads
/// took per thread past the first:
/// - brgemm avx512_core_bf16, for rows 1 to 16384, inner 16 to 20480, outer
///   512 and 3072: 128 B x inner + 768 up to inner 512, the inner dimension
///   blocked by 32; above, 66432 (inner to 1024) or 131968 B plus 256 B a
///   row up to 256 rows; where inner is a power of two from 4096 and the rows
///   reach 1024, a copy of the input to a padded leading dimension on top:
///   1197056 B in all at outer 512, 1721344 at outer 3072.
/// - brgemm avx512_core_amx, 820 shapes (rows 1 to 4096, inner 8 to 18944,
///   outer 16 to 3072): 128 B x inner + 4608 where inner is a multiple of 32
///   up to 1024, at most 904123 B above; an inner dimension with a tail
///   (not a multiple of 32) copies the inputs to a padded one: up to 2570649
///   B. The bound is their envelope (each measurement under it; a median of
///   2.5 times it).
/// - gemm:jit avx512_core: 4 B x rows x outer + 128, a float32 output per
///   thread (the bound adds 1024).
/// - other kernels (libtorch's own): not measured; the largest of the three.
double cpu_matmul_thread_scratch(
    std::string_view dtype, double rows, double inner, double outer,
    CpuMatmulKernel kernel = host_cpu_matmul_kernel());

/// A matrix product of a layer: the weight is (outer x inner).
struct MatmulShape {
  double inner = 0;
  double outer = 0;
};

}  // namespace mold
