#include "mold/tensor/ggml_quant.hpp"

#include <c10/util/Half.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mold/base/error.hpp"

namespace mold {

namespace {

constexpr std::size_t kQK = 32;    // elements of a Q4_0 .. Q8_0 block
constexpr std::size_t kQKK = 256;  // elements of a K-quant super-block

// Block sizes from ggml-common.h's block_* structs; a type mold does not
// dequantize is still listed so that a file holding it parses (molddiag
// inspect counts it) and the refusal can name it.
constexpr std::array<GgmlTypeInfo, 35> kTypes = {{
    {GgmlType::f32, "F32", 1, 4, true},
    {GgmlType::f16, "F16", 1, 2, true},
    {GgmlType::q4_0, "Q4_0", kQK, 2 + 16, true},
    {GgmlType::q4_1, "Q4_1", kQK, 2 + 2 + 16, true},
    {GgmlType::q5_0, "Q5_0", kQK, 2 + 4 + 16, true},
    {GgmlType::q5_1, "Q5_1", kQK, 2 + 2 + 4 + 16, true},
    {GgmlType::q8_0, "Q8_0", kQK, 2 + 32, true},
    {GgmlType::q8_1, "Q8_1", kQK, 2 + 2 + 32, false},
    {GgmlType::q2_k, "Q2_K", kQKK, 16 + 64 + 2 + 2, true},
    {GgmlType::q3_k, "Q3_K", kQKK, 32 + 64 + 12 + 2, true},
    {GgmlType::q4_k, "Q4_K", kQKK, 2 + 2 + 12 + 128, true},
    {GgmlType::q5_k, "Q5_K", kQKK, 2 + 2 + 12 + 32 + 128, true},
    {GgmlType::q6_k, "Q6_K", kQKK, 128 + 64 + 16 + 2, true},
    {GgmlType::q8_k, "Q8_K", kQKK, 4 + 256 + 32, false},
    {GgmlType::iq2_xxs, "IQ2_XXS", kQKK, 2 + 64, false},
    {GgmlType::iq2_xs, "IQ2_XS", kQKK, 2 + 64 + 8, false},
    {GgmlType::iq3_xxs, "IQ3_XXS", kQKK, 2 + 96, false},
    {GgmlType::iq1_s, "IQ1_S", kQKK, 2 + 32 + 16, false},
    {GgmlType::iq4_nl, "IQ4_NL", kQK, 2 + 16, true},
    {GgmlType::iq3_s, "IQ3_S", kQKK, 2 + 64 + 8 + 32 + 4, false},
    {GgmlType::iq2_s, "IQ2_S", kQKK, 2 + 64 + 8 + 8, false},
    {GgmlType::iq4_xs, "IQ4_XS", kQKK, 2 + 2 + 4 + 128, true},
    {GgmlType::i8, "I8", 1, 1, false},
    {GgmlType::i16, "I16", 1, 2, false},
    {GgmlType::i32, "I32", 1, 4, false},
    {GgmlType::i64, "I64", 1, 8, false},
    {GgmlType::f64, "F64", 1, 8, false},
    {GgmlType::iq1_m, "IQ1_M", kQKK, 32 + 16 + 8, false},
    {GgmlType::bf16, "BF16", 1, 2, true},
    {GgmlType::tq1_0, "TQ1_0", kQKK, 48 + 4 + 2, false},
    {GgmlType::tq2_0, "TQ2_0", kQKK, 64 + 2, false},
    {GgmlType::mxfp4, "MXFP4", kQK, 1 + 16, false},
    {GgmlType::nvfp4, "NVFP4", 64, 4 + 32, false},
    {GgmlType::q1_0, "Q1_0", 128, 2 + 16, false},
    {GgmlType::q2_0, "Q2_0", 64, 2 + 16, false},
}};

/// Ids ggml defined once and removed from GGUF files (ggml.h keeps them as
/// comments): a file holding one predates the removal.
struct RemovedGgmlType {
  std::uint32_t id;
  std::string_view name;
};
constexpr std::array<RemovedGgmlType, 8> kRemovedTypes = {{
    {4, "Q4_2"},
    {5, "Q4_3"},
    {31, "Q4_0_4_4"},
    {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"},
    {36, "IQ4_NL_4_4"},
    {37, "IQ4_NL_4_8"},
    {38, "IQ4_NL_8_8"},
}};

const RemovedGgmlType* removed_ggml_type(std::uint32_t id) {
  for (const auto& removed : kRemovedTypes)
    if (removed.id == id) return &removed;
  return nullptr;
}

std::uint16_t u16(const std::uint8_t* p) {
  return std::uint16_t(p[0] | (p[1] << 8));
}

void q4_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (std::size_t j = 0; j < 16; ++j) {
    y[j] = float((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = float((qs[j] >> 4) - 8) * d;
  }
}

void q4_1(const std::uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const std::uint8_t* qs = b + 4;
  for (std::size_t j = 0; j < 16; ++j) {
    y[j] = float(qs[j] & 0x0F) * d + m;
    y[j + 16] = float(qs[j] >> 4) * d + m;
  }
}

void q5_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  std::uint32_t qh;
  std::memcpy(&qh, b + 2, 4);  // little-endian on every machine mold runs on
  const std::uint8_t* qs = b + 6;
  for (std::size_t j = 0; j < 16; ++j) {
    const int high0 = int(((qh >> j) << 4) & 0x10);
    const int high1 = int((qh >> (j + 12)) & 0x10);
    y[j] = float(((qs[j] & 0x0F) | high0) - 16) * d;
    y[j + 16] = float(((qs[j] >> 4) | high1) - 16) * d;
  }
}

void q5_1(const std::uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  std::uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const std::uint8_t* qs = b + 8;
  for (std::size_t j = 0; j < 16; ++j) {
    const int high0 = int(((qh >> j) << 4) & 0x10);
    const int high1 = int((qh >> (j + 12)) & 0x10);
    y[j] = float((qs[j] & 0x0F) | high0) * d + m;
    y[j + 16] = float((qs[j] >> 4) | high1) * d + m;
  }
}

void q8_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  for (std::size_t j = 0; j < 32; ++j)
    y[j] = float(static_cast<std::int8_t>(b[2 + j])) * d;
}

/// Q2_K: 16 sub-blocks of 16, each with a 4-bit scale (low nibble) and
/// min (high nibble) in scales[16]; 2-bit quants in qs[64], four to a byte
/// (shift 0, 2, 4, 6 for four successive pairs of sub-blocks of each
/// 128-element half); then d and dmin. x = d sc q - dmin m.
void q2_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* scales = b;
  const std::uint8_t* q = b + 16;
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  int is = 0;
  for (std::size_t half = 0; half < 2; ++half) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const std::uint8_t sc = scales[is++];
        const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * float((q[l + 16 * part] >> shift) & 3) - ml;
      }
    }
    q += 32;
  }
}

/// The 6-bit scale s (0..15) of a Q3_K super-block from its 12 packed bytes:
/// the low 4 bits in the nibbles of bytes 0-7 (low nibbles for 0-7, high
/// for 8-15), the high 2 bits in bytes 8-11 (byte 8 + s % 4, bits 2 (s / 4)).
int scale_k3(int s, const std::uint8_t* packed) {
  const int low = s < 8 ? packed[s] & 0xF : packed[s - 8] >> 4;
  const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | (high << 4)) - 32;
}

/// Q3_K: 16 sub-blocks of 16 with signed 6-bit scales; a 3-bit quant is 2
/// low bits in qs[64] (as Q2_K's) and a high bit in hmask[32] (bit k for
/// the k-th pair of sub-blocks), stored inverted: a clear bit subtracts 4.
void q3_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* hmask = b;
  const std::uint8_t* q = b + 32;
  const std::uint8_t* packed = b + 96;
  const float d = half_at(b + 108);
  int is = 0, bit = 0;
  for (std::size_t half = 0; half < 2; ++half) {
    for (int shift = 0; shift < 8; shift += 2, ++bit) {
      for (int part = 0; part < 2; ++part) {
        const float dl = d * float(scale_k3(is++, packed));
        for (int l = 0; l < 16; ++l) {
          const int i = l + 16 * part;
          const int low = (q[i] >> shift) & 3;
          *y++ = dl * float(low - ((hmask[i] >> bit) & 1 ? 0 : 4));
        }
      }
    }
    q += 32;
  }
}

/// The 16 levels of IQ4_NL and IQ4_XS (a non-linear 4-bit code book).
constexpr std::array<std::int8_t, 16> kIq4Levels = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/// IQ4_NL: d, then 16 bytes of two 4-bit level indices each (low nibbles
/// are elements 0-15, high nibbles 16-31).
void iq4_nl(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(kIq4Levels[qs[j] & 0xF]);
    y[j + 16] = d * float(kIq4Levels[qs[j] >> 4]);
  }
}

/// IQ4_XS: d, the high 2 bits of 8 six-bit scales (scales_h, 2 bits each),
/// their low 4 bits (scales_l[4], a nibble each), then 8 sub-blocks of 32
/// laid out as IQ4_NL's; a sub-block's scale is d (scale - 32).
void iq4_xs(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const int high = u16(b + 2);
  const std::uint8_t* low = b + 4;
  const std::uint8_t* qs = b + 8;
  for (int sub = 0; sub < 8; ++sub) {
    const int scale = ((low[sub / 2] >> (4 * (sub % 2))) & 0xF) |
                      (((high >> (2 * sub)) & 3) << 4);
    const float dl = d * float(scale - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * float(kIq4Levels[qs[j] & 0xF]);
      y[j + 16] = dl * float(kIq4Levels[qs[j] >> 4]);
    }
    y += 32;
    qs += 16;
  }
}

void q4_k(const std::uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* q = b + 16;
  int is = 0;
  for (std::size_t j = 0; j < kQKK; j += 64) {
    std::uint8_t sc, mn;
    scale_min_k4(is, scales, sc, mn);
    const float d1 = d * sc, m1 = dmin * mn;
    scale_min_k4(is + 1, scales, sc, mn);
    const float d2 = d * sc, m2 = dmin * mn;
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

void q5_k(const std::uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* qh = b + 16;
  const std::uint8_t* ql = b + 48;
  int is = 0;
  std::uint8_t u1 = 1, u2 = 2;
  for (std::size_t j = 0; j < kQKK; j += 64) {
    std::uint8_t sc, mn;
    scale_min_k4(is, scales, sc, mn);
    const float d1 = d * sc, m1 = dmin * mn;
    scale_min_k4(is + 1, scales, sc, mn);
    const float d2 = d * sc, m2 = dmin * mn;
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * float((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * float((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = std::uint8_t(u1 << 2);
    u2 = std::uint8_t(u2 << 2);
  }
}

void q6_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (std::size_t n = 0; n < kQKK; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(sc[is]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block, packed
// in 12 bytes: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and
// 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11 with their top 2
// bits in the high bits of bytes 0-7.
const GgmlTypeInfo* ggml_type_info(std::uint32_t id) {
  for (const auto& info : kTypes)
    if (std::uint32_t(info.type) == id) return &info;
  return nullptr;
}

std::string ggml_type_name(std::uint32_t id) {
  if (const GgmlTypeInfo* info = ggml_type_info(id))
    return std::string(info->name);
  if (const RemovedGgmlType* removed = removed_ggml_type(id))
    return std::string(removed->name);
  return fmt::format("type {}", id);
}

std::string unreadable_ggml_type(std::uint32_t id) {
  if (const GgmlTypeInfo* info = ggml_type_info(id))
    return fmt::format(
        "is {} (ggml type {}), which mold does not read: it reads {}; "
        "convert the file to one of those (a GGUF converter's --type, e.g. "
        "Q4_K or Q8_0)",
        info->name, id, supported_ggml_types());
  if (const RemovedGgmlType* removed = removed_ggml_type(id))
    return fmt::format(
        "is {} (ggml type {}), a layout ggml removed from GGUF files: convert "
        "the original weights again with a current converter (mold reads {})",
        removed->name, id, supported_ggml_types());
  return fmt::format(
      "has ggml type id {}, which no ggml type mold knows has (the newest it "
      "knows is {}, {}): a newer converter wrote it, or the file is damaged; "
      "mold reads {}",
      id, std::uint32_t(kTypes.back().type), kTypes.back().name,
      supported_ggml_types());
}

std::string supported_ggml_types() {
  std::vector<std::string_view> names;
  for (const auto& info : kTypes)
    if (info.supported) names.push_back(info.name);
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += std::string(i == 0                  ? ""
                        : i + 1 == names.size() ? " and "
                                                : ", ") +
            std::string(names[i]);
  return text;
}

std::optional<std::uint64_t> ggml_bytes(const GgmlTypeInfo& type,
                                        std::uint64_t elements) {
  if (elements % type.block_elements) return std::nullopt;
  const std::uint64_t blocks = elements / type.block_elements;
  if (blocks > std::numeric_limits<std::uint64_t>::max() / type.block_bytes)
    return std::nullopt;
  return blocks * type.block_bytes;
}

float bfloat16_to_float(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

void dequantize_blocks(GgmlType type, const std::uint8_t* blocks,
                       std::size_t elements, float* out) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  if (!info || !info->supported)
    throw InvalidArgument(
        fmt::format("cannot dequantize: the data {}",
                    unreadable_ggml_type(std::uint32_t(type))));
  if (elements % info->block_elements)
    throw InvalidArgument(
        fmt::format("{} elements are not a whole number of {} blocks ({} each)",
                    elements, info->name, info->block_elements));
  void (*block)(const std::uint8_t*, float*) = nullptr;
  switch (type) {
  case GgmlType::f32:
    std::memcpy(out, blocks, elements * 4);
    return;
  case GgmlType::f16:
    for (std::size_t i = 0; i < elements; ++i)
      out[i] = half_to_float(u16(blocks + 2 * i));
    return;
  case GgmlType::bf16:
    for (std::size_t i = 0; i < elements; ++i)
      out[i] = bfloat16_to_float(u16(blocks + 2 * i));
    return;
  case GgmlType::q4_0:
    block = q4_0;
    break;
  case GgmlType::q4_1:
    block = q4_1;
    break;
  case GgmlType::q5_0:
    block = q5_0;
    break;
  case GgmlType::q5_1:
    block = q5_1;
    break;
  case GgmlType::q8_0:
    block = q8_0;
    break;
  case GgmlType::q2_k:
    block = q2_k;
    break;
  case GgmlType::q3_k:
    block = q3_k;
    break;
  case GgmlType::iq4_nl:
    block = iq4_nl;
    break;
  case GgmlType::iq4_xs:
    block = iq4_xs;
    break;
  case GgmlType::q4_k:
    block = q4_k;
    break;
  case GgmlType::q5_k:
    block = q5_k;
    break;
  case GgmlType::q6_k:
    block = q6_k;
    break;
  default:
    break;
  }
  const std::size_t count = elements / info->block_elements;
  for (std::size_t i = 0; i < count; ++i)
    block(blocks + i * info->block_bytes, out + i * info->block_elements);
}

std::uint16_t float_to_half(float value) {
  return c10::Half(value).x;  // round to nearest even, as the hardware does
}

namespace {

int nearest_level(float v, int top) {
  return std::clamp(int(std::lround(v)), 0, top);
}

// One Q4_K super-block (256 values, eight sub-blocks of 32): each sub-block's
// range [min(0, lowest), highest] in 15 steps, the steps and the mins as
// 6-bit multiples of the super-block's d and dmin, then each value's level
// under the rounded scale and min.
void quantize_q4_k_block(const float* x, std::uint8_t* out) {
  float scale[8], min[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* v = x + 32 * j;
    float lo = 0, hi = v[0];
    for (int l = 0; l < 32; ++l)
      lo = std::min(lo, v[l]), hi = std::max(hi, v[l]);
    scale[j] = std::max(0.0f, hi - lo) / 15;
    min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const std::uint16_t d = float_to_half(max_scale / 63),
                      dmin = float_to_half(max_min / 63);
  std::memcpy(out, &d, 2);
  std::memcpy(out + 2, &dmin, 2);
  std::uint8_t* scales = out + 4;
  std::memset(scales, 0, 12);
  std::uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::uint8_t(
        max_scale > 0 ? nearest_level(scale[j] * 63 / max_scale, 63) : 0);
    lm[j] = std::uint8_t(max_min > 0 ? nearest_level(min[j] * 63 / max_min, 63)
                                     : 0);
    if (j < 4) {
      scales[j] = ls[j], scales[j + 4] = lm[j];
    } else {  // the low four bits here, the top two above the first four's
      scales[j + 4] = std::uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= std::uint8_t((ls[j] >> 4) << 6);
      scales[j] |= std::uint8_t((lm[j] >> 4) << 6);
    }
  }
  std::uint8_t level[256];
  for (int j = 0; j < 8; ++j) {
    const float step = half_to_float(d) * ls[j],
                offset = half_to_float(dmin) * lm[j];
    for (int l = 0; l < 32; ++l)
      level[32 * j + l] = std::uint8_t(
          step > 0 ? nearest_level((x[32 * j + l] + offset) / step, 15) : 0);
  }
  // Each 32 bytes: the low nibbles a chunk's first 32 values, the high
  // nibbles its next 32.
  std::uint8_t* q = out + 16;
  for (int chunk = 0; chunk < 4; ++chunk, q += 32)
    for (int l = 0; l < 32; ++l)
      q[l] = std::uint8_t(level[64 * chunk + l] |
                          (level[64 * chunk + 32 + l] << 4));
}

}  // namespace

void quantize_blocks(GgmlType type, const float* x, std::size_t elements,
                     std::uint8_t* out) {
  constexpr std::size_t kBlock = 32;
  if (type != GgmlType::q4_0 && type != GgmlType::q8_0 &&
      type != GgmlType::q4_k)
    throw InvalidArgument(fmt::format(
        "mold quantizes to Q4_0, Q8_0 and Q4_K only, not {}; other types come "
        "from GGUF files",
        ggml_type_name(std::uint32_t(type))));
  const std::size_t block = type == GgmlType::q4_k ? kQKK : kBlock;
  if (elements % block != 0)
    throw InvalidArgument(
        fmt::format("{} elements are not whole blocks of {}", elements, block));
  if (type == GgmlType::q4_k) {
    for (std::size_t b = 0; b < elements / kQKK; ++b)
      quantize_q4_k_block(x + b * kQKK, out + b * 144);
    return;
  }
  for (std::size_t b = 0; b < elements / kBlock; ++b, x += kBlock) {
    if (type == GgmlType::q8_0) {
      float amax = 0;
      for (std::size_t j = 0; j < kBlock; ++j)
        amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127;
      const float id = d ? 1.0f / d : 0.0f;
      const std::uint16_t h = float_to_half(d);
      std::memcpy(out, &h, 2);
      for (std::size_t j = 0; j < kBlock; ++j)
        out[2 + j] = std::uint8_t(std::int8_t(std::roundf(x[j] * id)));
      out += 34;
    } else {
      // The value of largest magnitude, with its sign, maps to -8.
      float amax = 0, max = 0;
      for (std::size_t j = 0; j < kBlock; ++j)
        if (amax < std::fabs(x[j])) {
          amax = std::fabs(x[j]);
          max = x[j];
        }
      const float d = max / -8;
      const float id = d ? 1.0f / d : 0.0f;
      const std::uint16_t h = float_to_half(d);
      std::memcpy(out, &h, 2);
      for (std::size_t j = 0; j < kBlock / 2; ++j) {
        const auto q0 =
            std::uint8_t(std::min(15, int(std::int8_t(x[j] * id + 8.5f))));
        const auto q1 = std::uint8_t(
            std::min(15, int(std::int8_t(x[j + kBlock / 2] * id + 8.5f))));
        out[2 + j] = std::uint8_t(q0 | (q1 << 4));
      }
      out += 18;
    }
  }
}

}  // namespace mold
