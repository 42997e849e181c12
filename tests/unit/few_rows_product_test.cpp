// A few activation rows times a quantized matrix, computed from what is held
// (the vector clone this CPU runs), against the reference values
// (dequantize_blocks, float8_value) multiplied in double precision: the
// types decoded in registers and those decoded a row at a time, fp8 with
// its row scales; every matrix row of a range, one to nine activation rows
// (the four-row passes and what is left), a range that starts inside the
// matrix; and the refusals.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <mold/base/error.hpp>
#include <mold/tensor/few_rows_product.hpp>
#include <random>
#include <vector>

namespace {

// Random blocks with finite scales: Q4_0, Q8_0 and Q5_0 keep theirs in bytes
// 0-1, Q4_K and Q5_K d and dmin in bytes 0-3, Q6_K d in its last two; F16
// values are kept finite.
std::vector<std::uint8_t> random_blocks(mold::GgmlType type,
                                        std::size_t elements,
                                        std::mt19937& random) {
  const mold::GgmlTypeInfo& info = *mold::ggml_type_info(std::uint32_t(type));
  const std::size_t blocks = elements / info.block_elements;
  std::vector<std::uint8_t> data(blocks * info.block_bytes);
  for (auto& byte : data) byte = std::uint8_t(random());
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint8_t* block = data.data() + b * info.block_bytes;
    const std::uint16_t scale = std::uint16_t(0x2000 + random() % 0x1000);
    const std::size_t at = type == mold::GgmlType::q6_k ? 208 : 0;
    block[at] = std::uint8_t(scale), block[at + 1] = std::uint8_t(scale >> 8);
    if (type == mold::GgmlType::q4_k || type == mold::GgmlType::q5_k)
      block[2] = std::uint8_t(random()), block[3] = 0x20;
    if (type == mold::GgmlType::f16) block[1] &= 0x3F;  // |value| < 2
  }
  return data;
}

}  // namespace

TEST_CASE("a few rows times ggml blocks are the reference products",
          "[unit][ggml]") {
  std::mt19937 random(11);
  std::normal_distribution<float> normal;
  const std::size_t matrix_rows = 37, first = 5, last = 37;
  // The in-register types, two decoded a row at a time, and fp8 (f32 below).
  for (const mold::GgmlType type :
       {mold::GgmlType::q4_0, mold::GgmlType::q8_0, mold::GgmlType::q4_k,
        mold::GgmlType::q6_k, mold::GgmlType::q5_0, mold::GgmlType::f16,
        mold::GgmlType::f32}) {
    const bool float8 = type == mold::GgmlType::f32;
    // fp8 rows are any length: 520 leaves a tail past the 16-float vectors.
    const std::size_t columns = float8 ? 520 : 512;
    INFO((float8 ? "F8_E4M3" : mold::ggml_type_name(std::uint32_t(type))));
    std::vector<std::uint8_t> blocks;
    std::vector<float> w(matrix_rows * columns), scales(matrix_rows);
    mold::QuantizedMatrixView matrix;
    matrix.columns = columns;
    if (float8) {
      blocks.resize(w.size());
      for (auto& byte : blocks) byte = std::uint8_t(random() & 0x77);  // finite
      for (auto& scale : scales) scale = 0.5f + float(random() % 100) / 100;
      for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = mold::float8_value(blocks[i], mold::Float8Format::e4m3fn) *
               scales[i / columns];
      matrix.float8 = mold::Float8Format::e4m3fn;
      matrix.row_scales = scales.data();
    } else {
      blocks = random_blocks(type, matrix_rows * columns, random);
      mold::dequantize_blocks(type, blocks.data(), w.size(), w.data());
      matrix.type = type;
    }
    matrix.data = blocks.data();
    for (std::size_t rows = 1; rows <= 9; ++rows) {
      INFO(rows << " activation rows");
      std::vector<float> x(rows * columns);
      for (auto& v : x) v = normal(random);
      const std::size_t stride = last - first + 3;  // a wider output
      std::vector<float> out(rows * stride, -7.0f);
      mold::few_rows_product(matrix, first, last, x.data(), rows, out.data(),
                             stride);
      double worst = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t n = first; n < last; ++n) {
          double expected = 0, scale = 0;
          for (std::size_t k = 0; k < columns; ++k) {
            const double term = double(x[r * columns + k]) * w[n * columns + k];
            expected += term;
            scale += std::abs(term);
          }
          const double got = out[r * stride + n - first];
          worst = std::max(worst, std::abs(got - expected) / scale);
        }
        // Columns past the range are not written.
        for (std::size_t n = last - first; n < stride; ++n)
          CHECK(out[r * stride + n] == -7.0f);
      }
      // float32 sums of 512 terms: a few units of float32's last place of
      // the terms' magnitude.
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE(
    "a product from a quantized matrix refuses unreadable types, partial "
    "blocks and fp8 without scales",
    "[unit][ggml]") {
  std::vector<std::uint8_t> blocks(4096);
  std::vector<float> x(256), out(4);
  mold::QuantizedMatrixView matrix;
  matrix.data = blocks.data();
  matrix.columns = 256;
  matrix.type = mold::GgmlType(1000);
  CHECK_THROWS_AS(
      mold::few_rows_product(matrix, 0, 1, x.data(), 1, out.data(), 1),
      mold::InvalidArgument);
  matrix.type = mold::GgmlType::q4_k;
  matrix.columns = 160;
  CHECK_THROWS_WITH(
      mold::few_rows_product(matrix, 0, 1, x.data(), 1, out.data(), 1),
      Catch::Contains("160 columns") && Catch::Contains("256"));
  matrix.float8 = mold::Float8Format::e5m2;
  CHECK_THROWS_WITH(
      mold::few_rows_product(matrix, 0, 1, x.data(), 1, out.data(), 1),
      Catch::Contains("scales"));
}
