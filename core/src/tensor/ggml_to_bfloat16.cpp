#include "mold/tensor/ggml_to_bfloat16.hpp"

#include <fmt/format.h>

#include <cstring>

#include "mold/base/error.hpp"
#include "tensor/vector_clones.hpp"

// Each value as one product (and one difference for Q4_K) in float32, never
// fused into one rounding: the same bits as dequantize_blocks().
#if defined(__clang__)
#  pragma clang fp contract(off)
#endif

namespace mold {

namespace {

constexpr std::size_t kQ4_0Bytes = 18, kQ8_0Bytes = 34, kQ4_KBytes = 144;

using namespace vector_clones;
using Bits16 = std::uint32_t __attribute__((vector_size(64)));
using Halves16 = std::uint16_t __attribute__((vector_size(32)));

// Sixteen values to bfloat16 as float_to_bfloat16() rounds.

MOLD_INLINE void store_bfloat16(Floats16 values, std::uint16_t* y) {
  Bits16 bits;
  std::memcpy(&bits, &values, sizeof bits);
  const Bits16 rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const Bits16 nan = Bits16(values != values);  // all ones where NaN
  const Bits16 quiet_nan = Bits16{} + 0x7FC0u;
  const Bits16 out = (rounded & ~nan) | (quiet_nan & nan);
  const Halves16 narrow = __builtin_convertvector(out, Halves16);
  std::memcpy(y, &narrow, sizeof narrow);
}

MOLD_INLINE void q4_0_loop(const std::uint8_t* b, std::size_t count,
                           std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_0Bytes, y += 32) {
    const float d = half_at(b);
    // Low nibbles are elements 0-15, high ones 16-31, each less 8 (exact in
    // float32); unpacked in registers, never through memory.
    Bytes16 bytes;
    std::memcpy(&bytes, b + 2, 16);
    store_bfloat16((to_floats(bytes & std::uint8_t(0x0F)) - 8.0f) * d, y);
    store_bfloat16((to_floats(bytes >> 4) - 8.0f) * d, y + 16);
  }
}

MOLD_INLINE void q8_0_loop(const std::uint8_t* b, std::size_t count,
                           std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ8_0Bytes, y += 32) {
    const float d = half_at(b);
    for (int half = 0; half < 2; ++half) {
      Bytes16 bytes;
      std::memcpy(&bytes, b + 2 + 16 * half, 16);
      store_bfloat16(signed_to_floats(bytes) * d, y + 16 * half);
    }
  }
}

MOLD_INLINE void q4_k_loop(const std::uint8_t* b, std::size_t count,
                           std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_KBytes) {
    const std::uint8_t* q = b + 16;
    for (int chunk = 0; chunk < 4; ++chunk, q += 32, y += 64) {
      const Q4KChunk c = q4_k_chunk(b, chunk);
      // The scale's product, then the min's difference, each rounded:
      // sixteen nibbles at a time in registers.
      for (int part = 0; part < 2; ++part) {
        Bytes16 bytes;
        std::memcpy(&bytes, q + 16 * part, 16);
        const Floats16 low =
            to_floats(bytes & std::uint8_t(0x0F)) * c.low_scale;
        store_bfloat16(low - c.low_min, y + 16 * part);
        const Floats16 high = to_floats(bytes >> 4) * c.high_scale;
        store_bfloat16(high - c.high_min, y + 32 + 16 * part);
      }
    }
  }
}

// The clones: the vector code inlined into each (a clone's own calls pass
// no vector, which Clang refuses without the wider instructions).
MOLD_VECTOR_CLONES
void q4_0_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  q4_0_loop(b, count, y);
}

MOLD_VECTOR_CLONES
void q8_0_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  q8_0_loop(b, count, y);
}

MOLD_VECTOR_CLONES
void q4_k_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  q4_k_loop(b, count, y);
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
