#pragma once
/// How fast this machine multiplies matrices through libtorch: `at::linear` of
/// a [rows, in] input by an [out, in] weight, timed. The machine's own ceiling
/// for the matrix products that dominate a transformer step, so that a step's
/// achieved rate can be read as a fraction of it (bench/gemm_bench,
/// molddiag doctor).

#include <ATen/ATen.h>

#include <cstdint>

namespace mold {

struct GemmShape {
  std::int64_t rows = 0;  ///< tokens
  std::int64_t in = 0;    ///< input features
  std::int64_t out = 0;   ///< output features

  /// 2 * rows * in * out: one multiply and one add per term.
  double flops() const { return 2.0 * double(rows) * double(in) * double(out); }
};

struct GemmRate {
  double gflops = 0;   ///< billions of floating-point operations per second
  double seconds = 0;  ///< per product, the median of the timed repeats
  int repeats = 0;
};

/// Times `at::linear` of `shape` in `dtype` on the cpu (random inputs, one
/// untimed product first) until `min_seconds` have passed and at least 3
/// products ran; the rate is the median's.
GemmRate measure_gemm(const GemmShape& shape, at::ScalarType dtype,
                      double min_seconds = 0.5);

}  // namespace mold
