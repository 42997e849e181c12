#include "mold/tensor/float8.hpp"

#include <cmath>
#include <limits>

namespace mold {

std::optional<Float8Format> float8_format(std::string_view safetensors_dtype) {
  if (safetensors_dtype == "F8_E4M3") return Float8Format::e4m3fn;
  if (safetensors_dtype == "F8_E5M2") return Float8Format::e5m2;
  return std::nullopt;
}

std::string_view float8_dtype_name(Float8Format format) {
  return format == Float8Format::e4m3fn ? "F8_E4M3" : "F8_E5M2";
}

float float8_value(std::uint8_t byte, Float8Format format) {
  const bool e4m3 = format == Float8Format::e4m3fn;
  const int mantissa_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const int exponent_max = e4m3 ? 15 : 31;
  const float sign = (byte & 0x80) ? -1.0f : 1.0f;
  const int exponent = (byte & 0x7F) >> mantissa_bits;
  const int mantissa = byte & ((1 << mantissa_bits) - 1);
  if (e4m3 && exponent == exponent_max && mantissa == 7)
    return std::numeric_limits<float>::quiet_NaN();
  if (!e4m3 && exponent == exponent_max)
    return mantissa ? std::numeric_limits<float>::quiet_NaN()
                    : sign * std::numeric_limits<float>::infinity();
  const float fraction = float(mantissa) / float(1 << mantissa_bits);
  if (exponent == 0)  // subnormal
    return sign * std::ldexp(fraction, 1 - bias);
  return sign * std::ldexp(1.0f + fraction, exponent - bias);
}

const std::array<float, 256>& float8_table(Float8Format format) {
  static const auto make = [](Float8Format f) {
    std::array<float, 256> table{};
    for (int b = 0; b < 256; ++b) table[b] = float8_value(std::uint8_t(b), f);
    return table;
  };
  static const std::array<float, 256> e4m3 = make(Float8Format::e4m3fn);
  static const std::array<float, 256> e5m2 = make(Float8Format::e5m2);
  return format == Float8Format::e4m3fn ? e4m3 : e5m2;
}

}  // namespace mold
