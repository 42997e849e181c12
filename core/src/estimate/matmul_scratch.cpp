#include "mold/estimate/matmul_scratch.hpp"

#include <algorithm>
#include <cmath>

namespace mold {

namespace {

bool power_of_two(double value) {
  if (value < 1 || value != std::floor(value)) return false;
  const auto v = static_cast<unsigned long long>(value);
  return (v & (v - 1)) == 0;
}

/// brgemm avx512_core_bf16 (measured exactly; see the header).
double brgemm_bf16_scratch(double rows, double inner, double outer) {
  // The packing buffers: up to an inner dimension of 512 one block that
  // grows with it in steps of 32 (the bfloat16 kernels' blocking of the
  // inner dimension); above, two or three blocks' worth plus a part that
  // grows with the rows, to a block of 256 rows.
  const double row_part = 256 * std::min(rows, 256.0);
  double bytes = 0;
  if (inner <= 512)
    bytes = 128 * 32 * std::ceil(std::max(inner, 32.0) / 32) + 1024;
  else if (inner <= 1024)
    bytes = 66688 + row_part;
  else
    bytes = 132224 + row_part;
  // A power-of-two leading dimension from 4096 with rows from 1024: the
  // input copied to a padded one, which grows with the output's width.
  if (inner >= 4096 && power_of_two(inner) && rows >= 1024)
    bytes += 1024 * 1024 + 256 * outer;
  return bytes;
}

/// brgemm avx512_core_amx: an envelope of 820 measurements (see the header).
double brgemm_amx_scratch(double rows, double inner, double outer) {
  const double k = 32 * std::ceil(inner / 32);
  // The inner dimension in whole tiles of 32: one block that grows with it,
  // then at most a megabyte.
  if (inner <= 32 || std::fmod(inner, 32) == 0)
    return k <= 1024 ? 128 * k + 4608 : std::min(600000 + 70 * k, 1048576.0);
  // A tail: the inputs copied to a padded inner dimension, more with the
  // rows and the output's width.
  if (rows <= 16) return 300 * k + 40960;
  if (k <= 320)
    return rows <= 128 ? 300 * k + 40960 + 600 * rows + 0.5 * rows * outer
                       : 340000 + 45 * outer;
  return k <= 1024 ? 1250000 : 2750000;
}

/// gemm:jit avx512_core: a float32 copy of the output for each thread.
double gemm_jit_scratch(double rows, double outer) {
  return 4 * rows * outer + 1024;
}

}  // namespace

double cpu_matmul_thread_scratch(std::string_view dtype, double rows,
                                 double inner, double outer,
                                 CpuMatmulKernel kernel) {
  if (dtype != "bfloat16" || rows <= 0 || inner <= 0) return 0;
  switch (kernel) {
  case CpuMatmulKernel::avx512_bf16:
    return brgemm_bf16_scratch(rows, inner, outer);
  case CpuMatmulKernel::amx:
    return brgemm_amx_scratch(rows, inner, outer);
  case CpuMatmulKernel::avx512:
    return gemm_jit_scratch(rows, outer);
  case CpuMatmulKernel::other:
    break;
  }
  // Not measured: the largest of the three.
  return std::max({brgemm_bf16_scratch(rows, inner, outer),
                   brgemm_amx_scratch(rows, inner, outer),
                   gemm_jit_scratch(rows, outer)});
}

}  // namespace mold
