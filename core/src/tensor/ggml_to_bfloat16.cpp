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

float half_at(const std::uint8_t* p) {
  return half_to_float(std::uint16_t(p[0] | (p[1] << 8)));
}

MOLD_VECTOR_CLONES
void q4_0_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_0Bytes, y += 32) {
    const float d = half_at(b);
    const std::uint8_t* qs = b + 2;
    // The nibbles first, sixteen bytes at a time (low ones are elements
    // 0-15, high ones 16-31), each half stored whole so that the loop's
    // loads take it from the store; then one loop over the 32 as Q8_0's.
    using Bytes16 = std::uint8_t __attribute__((vector_size(16)));
    Bytes16 bytes;
    std::memcpy(&bytes, qs, 16);
    const Bytes16 low = bytes & std::uint8_t(0x0F), high = bytes >> 4;
    alignas(16) std::uint8_t q[32];
    std::memcpy(q, &low, 16);
    std::memcpy(q + 16, &high, 16);
    for (int j = 0; j < 32; ++j) {
      const float value = float(int(q[j]) - 8) * d;
      y[j] = float_to_bfloat16(value);
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

/// The 6-bit scale and min of Q4_K sub-block j (see ggml_quant.cpp).
void scale_min(int j, const std::uint8_t* q, float& scale, float& min) {
  if (j < 4) {
    scale = float(q[j] & 63);
    min = float(q[j + 4] & 63);
  } else {
    scale = float((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = float((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

MOLD_VECTOR_CLONES
void q4_k_blocks(const std::uint8_t* b, std::size_t count, std::uint16_t* y) {
  for (std::size_t i = 0; i < count; ++i, b += kQ4_KBytes) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* q = b + 16;
    for (int chunk = 0; chunk < 4; ++chunk, q += 32, y += 64) {
      float sc, mn;
      scale_min(2 * chunk, scales, sc, mn);
      const float d1 = d * sc, m1 = dmin * mn;
      scale_min(2 * chunk + 1, scales, sc, mn);
      const float d2 = d * sc, m2 = dmin * mn;
      for (int l = 0; l < 32; ++l) {
        const float scaled = d1 * float(q[l] & 0xF);
        y[l] = float_to_bfloat16(scaled - m1);
      }
      for (int l = 0; l < 32; ++l) {
        const float scaled = d2 * float(q[l] >> 4);
        y[l + 32] = float_to_bfloat16(scaled - m2);
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
