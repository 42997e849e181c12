#pragma once
/// The 8-bit float formats of fp8 checkpoints, as safetensors stores them
/// (dtype "F8_E4M3" and "F8_E5M2"): the bit layout of each and the exact value
/// of every byte. Torch-free: libtorch 1.13 has no float8 type, so mold
/// decodes the bytes itself (mold/tensor/quantized_tensor.hpp keeps fp8
/// weights as bytes on the device and decodes them as each layer runs), and
/// tests check that against this table.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mold {

enum class Float8Format {
  /// float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no
  /// infinities, S.1111.111 is NaN, the largest value is 448.
  e4m3fn,
  /// float8_e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE
  /// infinities and NaNs, the largest finite value is 57344.
  e5m2,
};

/// The format of a safetensors dtype ("F8_E4M3", "F8_E5M2"); nullopt for any
/// other (including the other 8-bit ones, "F8_E8M0", which mold does not
/// read).
std::optional<Float8Format> float8_format(std::string_view safetensors_dtype);
/// "F8_E4M3" or "F8_E5M2".
std::string_view float8_dtype_name(Float8Format format);

/// The value of one byte, exactly (every float8 value is a float).
float float8_value(std::uint8_t byte, Float8Format format);
/// float8_value() of every byte, indexed by the byte.
const std::array<float, 256>& float8_table(Float8Format format);

}  // namespace mold
