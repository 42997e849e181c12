#pragma once
/// ggml's tensor types as GGUF files store them: the plain ones (F32, F16,
/// BF16) and the block quantizations mold reads (Q4_0, Q4_1, Q5_0, Q5_1,
/// Q8_0; the K-quants Q2_K .. Q6_K; the non-linear IQ4_NL and IQ4_XS), with
/// their block sizes and the
/// reference dequantization of the format description, element by element.
/// Torch-free: this is the arithmetic that mold/tensor/quantized_tensor.hpp
/// runs as tensor operations on any device, and what tests check it against.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mold {

/// The values of ggml's `ggml_type` (ggml.h), as stored in GGUF tensor
/// infos.
enum class GgmlType : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
  q1_0 = 41,
  q2_0 = 42,
};

/// What a type is: its name as ggml writes it ("Q4_K"), how many elements a
/// block holds and how many bytes it takes, and whether mold reads it.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;
  std::size_t block_elements;
  std::size_t block_bytes;
  bool supported;  ///< dequantize_blocks() and dequantize() take it
};

/// The info of a type id from a file; nullptr for an id ggml does not define
/// (one it never did, or one it removed from GGUF files).
const GgmlTypeInfo* ggml_type_info(std::uint32_t id);
/// "Q4_K"; the name of a removed id ("Q4_0_4_4"); "type 99" for an id ggml
/// never defined.
std::string ggml_type_name(std::uint32_t id);
/// Why a file's type id cannot be read, for a message after "tensor \"x\" ":
/// "is IQ2_XXS (ggml type 16), which mold does not read: ...". Names the type,
/// the types mold reads and what to do; for an unknown id, the newest id mold
/// knows.
std::string unreadable_ggml_type(std::uint32_t id);

/// "F32, F16, BF16, Q4_0, ... and Q6_K": the types mold reads, from the
/// table, for messages.
std::string supported_ggml_types();

/// Bytes of `elements` elements of `type`; nullopt when `elements` is not a
/// whole number of blocks or the bytes would overflow.
std::optional<std::uint64_t> ggml_bytes(const GgmlTypeInfo& type,
                                        std::uint64_t elements);

/// IEEE half and bfloat16 bit patterns as floats (exact). Inline: the block
/// loops call it once a block.
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t bits;
  if (exponent == 0x1F) {  // infinity, NaN (its payload kept)
    bits = 0x7F800000u | (std::uint32_t(h & 0x3FFu) << 13);
  } else if (exponent == 0) {  // zero, subnormal: the mantissa times 2^-24
    const float magnitude = float(h & 0x3FFu) * 0x1p-24f;
    __builtin_memcpy(&bits, &magnitude, 4);
  } else {  // normal: the exponent rebased from 15 to 127
    bits = (std::uint32_t(h & 0x7FFFu) << 13) + ((127u - 15u) << 23);
  }
  bits |= std::uint32_t(h & 0x8000u) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}
float bfloat16_to_float(std::uint16_t bits);

/// The little-endian IEEE half at `p` (a block's scale) as a float.
inline float half_at(const std::uint8_t* p) {
  return half_to_float(std::uint16_t(p[0] | (p[1] << 8)));
}

/// The 6-bit scale and min of sub-block `j` (0-7) of a Q4_K or Q5_K
/// super-block, from its 12 packed bytes `scales`. Inline: the block loops
/// call it once a sub-block.
inline void scale_min_k4(int j, const std::uint8_t* scales, std::uint8_t& scale,
                         std::uint8_t& min) {
  if (j < 4) {
    scale = scales[j] & 63;
    min = scales[j + 4] & 63;
  } else {
    scale = std::uint8_t((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    min = std::uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

/// Chunk `chunk` (0-3) of a Q4_K super-block: its 64 values are the low
/// nibbles of the block's bytes 16 + 32 chunk to 47 + 32 chunk times
/// `low_scale` less `low_min`, then their high nibbles with the high pair
/// (d and dmin times the sub-blocks' 6-bit scales and mins).
struct Q4KChunk {
  float low_scale, low_min, high_scale, high_min;
};
inline Q4KChunk q4_k_chunk(const std::uint8_t* block, int chunk) {
  const float d = half_at(block), dmin = half_at(block + 2);
  std::uint8_t sc, mn;
  Q4KChunk c;
  scale_min_k4(2 * chunk, block + 4, sc, mn);
  c.low_scale = d * sc, c.low_min = dmin * mn;
  scale_min_k4(2 * chunk + 1, block + 4, sc, mn);
  c.high_scale = d * sc, c.high_min = dmin * mn;
  return c;
}

/// Dequantizes `elements` elements (a whole number of blocks) of a supported
/// type from `blocks` (little-endian, as in the file) into `out`, following
/// ggml's reference formulas (dequantize_row_* of ggml-quants.c) in float32.
/// Throws InvalidArgument for an unsupported type or a partial block.
void dequantize_blocks(GgmlType type, const std::uint8_t* blocks,
                       std::size_t elements, float* out);

/// A float as the IEEE half bit pattern nearest to it (round to nearest
/// even, as ggml's GGML_FP32_TO_FP16).
std::uint16_t float_to_half(float value);

/// Quantizes `elements` floats (a whole number of blocks) into `out`: Q4_0
/// and Q8_0 as ggml's reference quantizers do (quantize_row_q4_0_ref,
/// _q8_0_ref), the types of a seeded model's q4 and q8 variants; Q4_K (the
/// published q4 files' type, for benchmarks and tests) from each
/// sub-block's range, without the search for a better scale and min that
/// ggml's quantize_row_q4_K_ref makes (the same format, a little more
/// error). Other types come from GGUF files. Throws InvalidArgument for
/// another type or a partial block.
void quantize_blocks(GgmlType type, const float* values, std::size_t elements,
                     std::uint8_t* out);

}  // namespace mold
