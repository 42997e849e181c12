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

/// Formats as PyTorch's allocator does: up to 1024 -> "512 bytes", then two
/// decimals in the largest binary unit not exceeded: "978.00 MiB", "5.01 GiB".
std::string format_bytes(Bytes bytes);

/// Parses "5.01 GiB", "978.00 MiB", "3.00 GB", "2359296 bytes", "512B", "8GiB",
/// "1024". KB/MB/GB/TB are read as powers of 1024, as PyTorch's older messages
/// print them
/// ("3.00 GB" meant 3 GiB); a bare number is bytes. Case-insensitive units,
/// optional space, optional thousands commas. Rounds to the nearest byte.
/// nullopt when the text is not a byte count.
std::optional<Bytes> try_parse_bytes(std::string_view text);

/// As try_parse_bytes, but throws ParseError naming the text and the accepted
/// forms.
Bytes parse_bytes(std::string_view text);

}  // namespace mold
