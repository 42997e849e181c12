#pragma once
/// How the cpu backend multiplies activations by a matrix held quantized
/// (GGUF blocks, fp8 bytes): up to kMaxRowsFromBlocks rows straight from what
/// is held (mold/tensor/few_rows_product.hpp), more through the matrix
/// dequantized into the model's buffer and the backend's product. The
/// estimates count that buffer from it. Torch-free.

#include <cstddef>

namespace mold {

/// Activation rows up to which a model's layer multiplies a quantized matrix
/// from its blocks on the cpu (dequant_bench's few-rows table: above, the
/// dequantized matrix and the backend's bfloat16 product are faster).
constexpr std::size_t kMaxRowsFromBlocks = 4;

/// Whether the cpu backend multiplies `rows` activation rows whose elements
/// are `element_bytes` wide by a quantized matrix from its blocks: a 16-bit
/// dtype (bfloat16, float16: the product from the blocks, in float32, is
/// faster and more exact than the matrix rounded to the dtype) and at most
/// kMaxRowsFromBlocks rows. In float32 the matrix is dequantized exactly and
/// multiplied as a dense model's, bit for bit: a GGUF or fp8 file makes the
/// image its dense twin makes.
constexpr bool cpu_multiplies_from_blocks(std::size_t element_bytes,
                                          double rows) {
  return element_bytes == 2 && rows <= double(kMaxRowsFromBlocks);
}

}  // namespace mold
