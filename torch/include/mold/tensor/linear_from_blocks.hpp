#pragma once
/// A linear layer whose matrix is kept quantized (GGUF blocks, fp8 bytes),
/// applied to a few rows (a modulation layer's timestep vector, a batch of
/// them) straight from what is held (mold/tensor/few_rows_product.hpp): the
/// matrix is read once at its stored size instead of dequantized, written
/// and read again. For more rows the dequantized matrix and the backend's
/// product are faster (its bfloat16 instructions do twice the float32
/// ones' work).

#include <ATen/ATen.h>

#include <cstdint>

#include "mold/device/cpu_quantized_product.hpp"
#include "mold/tensor/quantized_tensor.hpp"

namespace mold {

/// Whether linear_from_blocks() takes `x` ([..., columns]) times `weight`:
/// both on the cpu, and cpu_multiplies_from_blocks() for x's dtype and rows
/// (bfloat16 or float16, at most kMaxRowsFromBlocks rows).
bool linear_from_blocks_takes(const at::Tensor& x,
                              const QuantizedTensor& weight);

/// at::linear(x, dequantize(weight), bias), computed from the blocks in
/// float32 (more exact than the 16-bit product: the weights are not
/// rounded), over the intra-op threads; the result in x's dtype. Any rows
/// and float dtype (a benchmark's choice; a model's is
/// linear_from_blocks_takes()). InvalidArgument unless both are on the cpu
/// and the shapes match.
at::Tensor linear_from_blocks(const at::Tensor& x,
                              const QuantizedTensor& weight,
                              const at::Tensor& bias);

}  // namespace mold
