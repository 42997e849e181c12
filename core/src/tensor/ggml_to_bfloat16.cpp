#include "mold/tensor/ggml_to_bfloat16.hpp"

#include <fmt/format.h>

#include <cstring>

#include "mold/base/error.hpp"

// Each value as one product (and one difference for Q4_K) in float32, never
// fused into one rounding: the same bits as dequantize_blocks().
#if defined(__clang__)
#  pragma clang fp contract(off)
#endif

// The block loops compiled for x86-64-v4 (AVX-512), v3 (AVX2) and the baseline,
// the one for this CPU chosen when the program loads.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__APPLE__)
#  define MOLD_VECTOR_CLONES \
    __attribute__((          \
        target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#  define MOLD_VECTOR_CLONES
#endif

namespace mold {

namespace {

constexpr std::size_t kQ4_0Bytes = 18, kQ8_0Bytes = 34, kQ4_KBytes = 144;

// Eight values in registers (GCC's and Clang's vector types): bytes less 8,
// times the scale, to bfloat16 as float_to_bfloat16() rounds.
using Bytes8 = std::uint8_t __attribute__((vector_size(8)));
using Ints8 = std::int32_t __attribute__((vector_size(32)));
using Bits8 = std::uint32_t __attribute__((vector_size(32)));
using Floats8 = float __attribute__((vector_size(32)));
using Halves8 = std::uint16_t __attribute__((vector_size(16)));

inline __attribute__((always_inline)) void nibbles_to_bfloat16(
    Bytes8 q, float d, std::uint16_t* y) {
  const Floats8 values =
      __builtin_convertvector(__builtin_convertvector(q, Ints8) - 8, Floats8) *
      d;
  Bits8 bits;
  std::memcpy(&bits, &values, sizeof bits);
  const Bits8 rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const Bits8 nan = Bits8(values != values);  // all ones where NaN
  const Bits8 quiet_nan = Bits8{} + 0x7FC0u;
  const Bits8 out = (rounded & ~nan) | (quiet_nan & nan);
  const Halves8 narrow = __builtin_convertvector(out, Halves8);
  std::memcpy(y, &narrow, sizeof narrow);
}

MOLD_VECTOR_CLONES
void q4_0_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_0Bytes, y += 32) {
    const float d = half_at(b);
    // Low nibbles are elements 0-15, high ones 16-31; unpacked eight at a
    // time in registers, never through memory.
    for (int half = 0; half < 2; ++half) {
      Bytes8 bytes;
      std::memcpy(&bytes, b + 2 + 8 * half, 8);
      nibbles_to_bfloat16(bytes & std::uint8_t(0x0F), d, y + 8 * half);
      nibbles_to_bfloat16(bytes >> 4, d, y + 16 + 8 * half);
    }
  }
}

MOLD_VECTOR_CLONES
void q8_0_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ8_0Bytes, y += 32) {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) {
      const float value = float(static_cast<std::int8_t>(b[2 + j])) * d;
      y[j] = float_to_bfloat16(value);
    }
  }
}

MOLD_VECTOR_CLONES
void q4_k_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_KBytes) {
    const std::uint8_t* q = b + 16;
    for (int chunk = 0; chunk < 4; ++chunk, q += 32, y += 64) {
      const Q4KChunk c = q4_k_chunk(b, chunk);
      for (int l = 0; l < 32; ++l) {
        const float scaled = c.low_scale * float(q[l] & 0xF);
        y[l] = float_to_bfloat16(scaled - c.low_min);
      }
      for (int l = 0; l < 32; ++l) {
        const float scaled = c.high_scale * float(q[l] >> 4);
        y[l + 32] = float_to_bfloat16(scaled - c.high_min);
      }
    }
  }
}

}  // namespace

bool dequantizes_to_bfloat16_directly(GgmlType type) {
  return type == GgmlType::q4_0 || type == GgmlType::q8_0 ||
         type == GgmlType::q4_k;
}

void dequantize_blocks_to_bfloat16(GgmlType type, const std::uint8_t* blocks,
                                   std::size_t elements, std::uint16_t* out) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  if (!info || !dequantizes_to_bfloat16_directly(type))
    throw InvalidArgument(fmt::format(
        "cannot dequantize {} straight to bfloat16: Q4_0, Q8_0 and Q4_K only",
        info ? std::string(info->name) : std::to_string(std::uint32_t(type))));
  if (elements % info->block_elements)
    throw InvalidArgument(
        fmt::format("{} elements are not a whole number of {} blocks ({} each)",
                    elements, info->name, info->block_elements));
  const std::size_t count = elements / info->block_elements;
  switch (type) {
  case GgmlType::q4_0:
    return q4_0_blocks(blocks, count, out);
  case GgmlType::q8_0:
    return q8_0_blocks(blocks, count, out);
  default:
    return q4_k_blocks(blocks, count, out);
  }
}

}  // namespace mold
