#pragma once
/// The product of a few activation rows with a matrix held quantized (GGUF
/// blocks of any type mold reads, or fp8 bytes), computed from what is held:
/// each block decoded as it is read and multiplied in float32, never written
/// out. For one to a few rows (a modulation layer's timestep vector) the
/// matrix is read once at its stored size, where dequantizing it first
/// writes and reads it again in the model's dtype (Qwen-Image's modulation:
/// 2 x 57 M weights a block, a step). Q4_0, Q8_0 and Q4_K (what a quantized
/// denoiser keeps) are decoded in registers, vectorized for the CPU it runs
/// on; the other types through a block-sized buffer. Torch-free.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "mold/tensor/float8.hpp"
#include "mold/tensor/ggml_quant.hpp"

namespace mold {

/// A quantized matrix of `columns` by any number of rows, row-major as it is
/// held: ggml blocks of `type` (row n's blocks after row n-1's), or with
/// `float8` one byte an element, each row's values times its `row_scales`.
struct QuantizedMatrixView {
  const std::uint8_t* data = nullptr;
  std::size_t columns = 0;
  GgmlType type = GgmlType::f32;
  std::optional<Float8Format> float8;
  const float* row_scales = nullptr;  ///< fp8: one a matrix row
};

/// out[r * out_stride + n - first] = sum over k of x[r * columns + k] *
/// W[n][k], for r in [0, rows) and matrix rows n in [first, last): float32
/// products and sums of the held values (exact in float32), in an order of
/// its own. Throws InvalidArgument for a ggml type mold cannot dequantize,
/// columns that are not whole blocks, or fp8 without row scales.
void few_rows_product(const QuantizedMatrixView& matrix, std::size_t first,
                      std::size_t last, const float* x, std::size_t rows,
                      float* out, std::size_t out_stride);

}  // namespace mold
