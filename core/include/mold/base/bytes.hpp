#pragma once
/// Byte counts, and their text forms as people and PyTorch write them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mold {

/// A number of bytes. Memory figures in mold are always exact byte counts; text
/// forms are for people.
using Bytes = std::uint64_t;

inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;
inline constexpr Bytes kTiB = 1024 * kGiB;
/// The largest byte count mold represents: 2^63 - 1 (8 EiB), so that every
/// count also fits a signed 64-bit integer (libtorch's sizes, JSON readers).
inline constexpr Bytes kMaxBytes = (Bytes(1) << 63) - 1;

/// Formats as PyTorch's allocator does: up to 1024 -> "512 bytes", then two
/// decimals in the largest binary unit not exceeded: "978.00 MiB", "5.01 GiB".
std::string format_bytes(Bytes bytes);

/// A change in bytes (a rate, a difference), rounded to the nearest byte and
/// formatted as format_bytes with its sign: "-2.00 MiB"; "+512 bytes" when
/// `plus` (a zero or positive change then shows its sign too), else "512
/// bytes".
std::string format_byte_change(double bytes, bool plus = false);

/// Parses "5.01 GiB", "978.00 MiB", "3.00 GB", "2359296 bytes", "512B", "8GiB",
/// "1024", "1.5e3 MiB". KB/MB/GB/TB are read as powers of 1024, as PyTorch's
/// older messages print them ("3.00 GB" meant 3 GiB); a bare number is bytes.
/// Case-insensitive units, optional space, optional thousands commas, decimal
/// and scientific forms. Rounds to the nearest byte. nullopt when the text is
/// not a byte count, is negative, or is more than kMaxBytes: never a wrapped
/// or saturated number.
std::optional<Bytes> try_parse_bytes(std::string_view text);

/// Whether `word` is a unit try_parse_bytes reads ("GiB", "MB", "bytes", ...;
/// case-insensitive; the empty word is not).
bool is_byte_unit(std::string_view word);

/// As try_parse_bytes, but throws ParseError naming the text and why it is
/// refused (not a number, negative, unknown unit, too large).
Bytes parse_bytes(std::string_view text);

/// `value` bytes (an estimate's product in floating point) as a byte count;
/// throws InvalidArgument naming `what` and the value when it is not finite,
/// negative or more than kMaxBytes, instead of wrapping or saturating.
Bytes bytes_from_double(double value, std::string_view what);

/// a * b, or InvalidArgument naming `what` and both factors when the product
/// is more than kMaxBytes.
Bytes checked_multiply(Bytes a, Bytes b, std::string_view what);

}  // namespace mold
