// The float8 formats of fp8 checkpoints, byte by byte: e4m3fn against its
// definition's landmarks (no infinities, 448 the largest, 2^-9 the
// smallest), e5m2 against IEEE half precision, whose top byte it is.

#include <catch2/catch.hpp>
#include <cmath>
#include <mold/tensor/float8.hpp>
#include <mold/tensor/ggml_quant.hpp>

using mold::Float8Format;

TEST_CASE("float8_e4m3fn decodes every byte", "[float8]") {
  const auto& table = mold::float8_table(Float8Format::e4m3fn);
  CHECK(table[0x00] == 0.0f);
  CHECK(std::signbit(table[0x80]));
  CHECK(table[0x38] == 1.0f);  // exponent 7 = bias
  CHECK(table[0xB8] == -1.0f);
  CHECK(table[0x7E] == 448.0f);  // the largest
  CHECK(table[0xFE] == -448.0f);
  CHECK(table[0x01] == std::ldexp(1.0f, -9));  // the smallest subnormal
  CHECK(table[0x07] == 7 * std::ldexp(1.0f, -9));
  CHECK(table[0x08] == std::ldexp(1.0f, -6));  // the smallest normal
  CHECK(table[0x3C] == 1.5f);
  CHECK(std::isnan(table[0x7F]));
  CHECK(std::isnan(table[0xFF]));
  int nan = 0;
  for (int b = 0; b < 256; ++b) {
    INFO(b);
    if (std::isnan(table[b])) {
      ++nan;
      continue;
    }
    CHECK(std::isfinite(table[b]));  // no infinities in e4m3fn
    CHECK(table[b] ==
          mold::float8_value(std::uint8_t(b), Float8Format::e4m3fn));
    if (b > 0 && b <= 0x7E) CHECK(table[b] > table[b - 1]);
    if (b >= 0x80) CHECK(table[b] == -table[b - 0x80]);
  }
  CHECK(nan == 2);
}

TEST_CASE("float8_e5m2 is the top byte of an IEEE half", "[float8]") {
  const auto& table = mold::float8_table(Float8Format::e5m2);
  for (int b = 0; b < 256; ++b) {
    INFO(b);
    const float half = mold::half_to_float(std::uint16_t(b << 8));
    if (std::isnan(half))
      CHECK(std::isnan(table[b]));
    else
      CHECK(table[b] == half);
  }
  CHECK(table[0x7B] == 57344.0f);
  CHECK(std::isinf(table[0x7C]));
}

TEST_CASE("float8 formats are named as safetensors names them", "[float8]") {
  CHECK(mold::float8_format("F8_E4M3") == Float8Format::e4m3fn);
  CHECK(mold::float8_format("F8_E5M2") == Float8Format::e5m2);
  CHECK_FALSE(mold::float8_format("F8_E8M0"));
  CHECK_FALSE(mold::float8_format("F8_E4M3FNUZ"));
  CHECK_FALSE(mold::float8_format("BF16"));
  CHECK(mold::float8_dtype_name(Float8Format::e5m2) == "F8_E5M2");
}
