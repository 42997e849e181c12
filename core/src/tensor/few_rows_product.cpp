#include "mold/tensor/few_rows_product.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "mold/base/error.hpp"
#include "tensor/vector_clones.hpp"

namespace mold {

namespace {

using namespace vector_clones;

constexpr std::size_t kQ4_0Bytes = 18, kQ8_0Bytes = 34, kQ4_KBytes = 144;
constexpr std::size_t kRowsAtOnce = 4;  // activation rows per pass over W

MOLD_INLINE Floats16 load_floats(const float* p) {
  Floats16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// 32 consecutive values of a matrix row (v0: the first 16), times the same 32
// columns of each of R activation rows, added to acc.
template <std::size_t R>
MOLD_INLINE void add_group(Floats16 v0, Floats16 v1, const float* x,
                           std::size_t columns, Floats16* acc) {
  for (std::size_t r = 0; r < R; ++r) {
    const float* row = x + r * columns;
    acc[r] += v0 * load_floats(row) + v1 * load_floats(row + 16);
  }
}

// Each block type: its groups of 32 values, decoded in registers, added.
struct Q4_0 {
  static constexpr std::size_t kBytes = kQ4_0Bytes, kElements = 32;
  template <std::size_t R>
  static MOLD_INLINE void add(const std::uint8_t* b, const float* x,
                              std::size_t columns, Floats16* acc) {
    const float d = half_at(b);
    Bytes16 q;
    std::memcpy(&q, b + 2, 16);
    // Low nibbles are elements 0-15, high ones 16-31, each less 8.
    const Floats16 low = (to_floats(q & std::uint8_t(0x0F)) - 8.0f) * d;
    const Floats16 high = (to_floats(q >> 4) - 8.0f) * d;
    add_group<R>(low, high, x, columns, acc);
  }
};

struct Q8_0 {
  static constexpr std::size_t kBytes = kQ8_0Bytes, kElements = 32;
  template <std::size_t R>
  static MOLD_INLINE void add(const std::uint8_t* b, const float* x,
                              std::size_t columns, Floats16* acc) {
    const float d = half_at(b);
    Bytes16 q0, q1;
    std::memcpy(&q0, b + 2, 16);
    std::memcpy(&q1, b + 18, 16);
    add_group<R>(signed_to_floats(q0) * d, signed_to_floats(q1) * d, x, columns,
                 acc);
  }
};

struct Q4_K {
  static constexpr std::size_t kBytes = kQ4_KBytes, kElements = 256;
  template <std::size_t R>
  static MOLD_INLINE void add(const std::uint8_t* b, const float* x,
                              std::size_t columns, Floats16* acc) {
    // Four chunks of 64 values: the low nibbles of 32 bytes are the first
    // 32, the high ones the next 32.
    const std::uint8_t* q = b + 16;
    for (int chunk = 0; chunk < 4; ++chunk, q += 32, x += 64) {
      const Q4KChunk c = q4_k_chunk(b, chunk);
      Bytes16 q0, q1;
      std::memcpy(&q0, q, 16);
      std::memcpy(&q1, q + 16, 16);
      const std::uint8_t low = 0x0F;
      add_group<R>(to_floats(q0 & low) * c.low_scale - c.low_min,
                   to_floats(q1 & low) * c.low_scale - c.low_min, x, columns,
                   acc);
      add_group<R>(to_floats(q0 >> 4) * c.high_scale - c.high_min,
                   to_floats(q1 >> 4) * c.high_scale - c.high_min, x + 32,
                   columns, acc);
    }
  }
};

// Halves added to halves: four vector adds, not fifteen in a row.
MOLD_INLINE float lanes_sum(Floats16 v) {
  float lanes[16];
  std::memcpy(lanes, &v, sizeof lanes);
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  return lanes[0];
}

// R activation rows times matrix rows [first, last).
template <typename Block, std::size_t R>
MOLD_INLINE void rows_product(const QuantizedMatrixView& m, std::size_t first,
                              std::size_t last, const float* x, float* out,
                              std::size_t out_stride) {
  const std::size_t blocks = m.columns / Block::kElements;
  const std::uint8_t* b = m.data + first * blocks * Block::kBytes;
  for (std::size_t n = first; n < last; ++n) {
    Floats16 acc[R] = {};
    for (std::size_t i = 0; i < blocks; ++i, b += Block::kBytes)
      Block::template add<R>(b, x + i * Block::kElements, m.columns, acc);
    for (std::size_t r = 0; r < R; ++r)
      out[r * out_stride + n - first] = lanes_sum(acc[r]);
  }
}

template <typename Block>
MOLD_INLINE void product(const QuantizedMatrixView& m, std::size_t first,
                         std::size_t last, const float* x, std::size_t rows,
                         float* out, std::size_t out_stride) {
  // Up to four activation rows per pass over the blocks: each block decoded
  // once for all of them.
  for (std::size_t r = 0; r < rows; r += kRowsAtOnce) {
    const float* xr = x + r * m.columns;
    float* o = out + r * out_stride;
    switch (std::min(kRowsAtOnce, rows - r)) {
    case 1:
      rows_product<Block, 1>(m, first, last, xr, o, out_stride);
      break;
    case 2:
      rows_product<Block, 2>(m, first, last, xr, o, out_stride);
      break;
    case 3:
      rows_product<Block, 3>(m, first, last, xr, o, out_stride);
      break;
    default:
      rows_product<Block, 4>(m, first, last, xr, o, out_stride);
    }
  }
}

// Any other type (and fp8): each matrix row decoded into a buffer by the
// reference decoder, then multiplied.
MOLD_INLINE void dot_rows(const float* w, const float* x, std::size_t columns,
                          std::size_t rows, float scale, float* out,
                          std::size_t out_stride) {
  const std::size_t vectors = columns / 16;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * columns;
    Floats16 acc = {};
    for (std::size_t i = 0; i < vectors; ++i)
      acc += load_floats(w + 16 * i) * load_floats(xr + 16 * i);
    float sum = lanes_sum(acc);
    for (std::size_t k = 16 * vectors; k < columns; ++k) sum += w[k] * xr[k];
    out[r * out_stride] = sum * scale;
  }
}

// The vector code inlined into each clone (a clone's own calls pass no
// vector: Clang refuses those without the wider instructions).
MOLD_VECTOR_CLONES
void row_dots(const float* w, const float* x, std::size_t columns,
              std::size_t rows, float scale, float* out,
              std::size_t out_stride) {
  dot_rows(w, x, columns, rows, scale, out, out_stride);
}

void product_through_rows(const QuantizedMatrixView& m, std::size_t first,
                          std::size_t last, const float* x, std::size_t rows,
                          float* out, std::size_t out_stride) {
  std::vector<float> w(m.columns);
  if (m.float8) {
    const auto& table = float8_table(*m.float8);
    for (std::size_t n = first; n < last; ++n) {
      const std::uint8_t* bytes = m.data + n * m.columns;
      for (std::size_t k = 0; k < m.columns; ++k) w[k] = table[bytes[k]];
      row_dots(w.data(), x, m.columns, rows, m.row_scales[n], out + n - first,
               out_stride);
    }
    return;
  }
  const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(m.type));
  const std::size_t row_bytes =
      m.columns / info.block_elements * info.block_bytes;
  for (std::size_t n = first; n < last; ++n) {
    dequantize_blocks(m.type, m.data + n * row_bytes, m.columns, w.data());
    row_dots(w.data(), x, m.columns, rows, 1.0f, out + n - first, out_stride);
  }
}

MOLD_VECTOR_CLONES
void q4_0_product(const QuantizedMatrixView& m, std::size_t first,
                  std::size_t last, const float* x, std::size_t rows,
                  float* out, std::size_t out_stride) {
  product<Q4_0>(m, first, last, x, rows, out, out_stride);
}

MOLD_VECTOR_CLONES
void q8_0_product(const QuantizedMatrixView& m, std::size_t first,
                  std::size_t last, const float* x, std::size_t rows,
                  float* out, std::size_t out_stride) {
  product<Q8_0>(m, first, last, x, rows, out, out_stride);
}

MOLD_VECTOR_CLONES
void q4_k_product(const QuantizedMatrixView& m, std::size_t first,
                  std::size_t last, const float* x, std::size_t rows,
                  float* out, std::size_t out_stride) {
  product<Q4_K>(m, first, last, x, rows, out, out_stride);
}

}  // namespace

void few_rows_product(const QuantizedMatrixView& matrix, std::size_t first,
                      std::size_t last, const float* x, std::size_t rows,
                      float* out, std::size_t out_stride) {
  if (matrix.float8) {
    if (!matrix.row_scales)
      throw InvalidArgument("a product from fp8 bytes needs the rows' scales");
  } else {
    const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(matrix.type));
    if (!info || !info->supported)
      throw InvalidArgument(
          fmt::format("no product from the matrix: its data {}",
                      unreadable_ggml_type(std::uint32_t(matrix.type))));
    if (matrix.columns == 0 || matrix.columns % info->block_elements)
      throw InvalidArgument(fmt::format(
          "a {} matrix of {} columns: rows must be whole blocks of {}",
          info->name, matrix.columns, info->block_elements));
  }
  if (first >= last || rows == 0) return;
  switch (matrix.float8 ? GgmlType::f32 : matrix.type) {
  case GgmlType::q4_0:
    return q4_0_product(matrix, first, last, x, rows, out, out_stride);
  case GgmlType::q8_0:
    return q8_0_product(matrix, first, last, x, rows, out, out_stride);
  case GgmlType::q4_k:
    return q4_k_product(matrix, first, last, x, rows, out, out_stride);
  default:
    return product_through_rows(matrix, first, last, x, rows, out, out_stride);
  }
}

}  // namespace mold
