#pragma once
/// Quantized GGUF blocks straight to bfloat16, for the types a quantized
/// denoiser's matrices are kept in (Q4_0, Q8_0: what mold quantizes to; Q4_K:
/// the published q4 files): each block's values in float32 by ggml's
/// reference formulas (as dequantize_blocks() computes them, bit for bit),
/// rounded to the nearest bfloat16 (ties to even, as libtorch's conversion),
/// in one pass with no float buffer, vectorized for the CPU it runs on.
/// Torch-free.

#include <cstddef>
#include <cstdint>

#include "mold/tensor/ggml_quant.hpp"

namespace mold {

/// Whether dequantize_blocks_to_bfloat16() takes `type`.
bool dequantizes_to_bfloat16_directly(GgmlType type);

/// `elements` elements (whole blocks) of `type` from `blocks` into `out` as
/// bfloat16 bit patterns. Throws InvalidArgument for a type it does not take
/// or a partial block.
void dequantize_blocks_to_bfloat16(GgmlType type, const std::uint8_t* blocks,
                                   std::size_t elements, std::uint16_t* out);

/// The bfloat16 nearest `value` (ties to even; NaN stays a quiet NaN), as
/// libtorch's float-to-bfloat16 conversion.
inline std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t bits;
  __builtin_memcpy(&bits, &value, 4);
  if (value != value) return 0x7FC0;
  return std::uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace mold
