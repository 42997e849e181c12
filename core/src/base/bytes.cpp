#include "mold/base/bytes.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <string>

#include "mold/base/error.hpp"

namespace mold {

std::string format_bytes(Bytes bytes) {
  if (bytes <= kKiB) return fmt::format("{} bytes", bytes);
  if (bytes <= kMiB) return fmt::format("{:.2f} KiB", bytes / double(kKiB));
  if (bytes <= kGiB) return fmt::format("{:.2f} MiB", bytes / double(kMiB));
  return fmt::format("{:.2f} GiB", bytes / double(kGiB));
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> unit_multiplier(std::string_view unit) {
  const std::string u = lower(unit);
  if (u.empty() || u == "b" || u == "byte" || u == "bytes") return 1.0;
  // PyTorch's older messages print "GB" for 2^30: every unit is binary.
  if (u == "k" || u == "kb" || u == "kib") return double(kKiB);
  if (u == "m" || u == "mb" || u == "mib") return double(kMiB);
  if (u == "g" || u == "gb" || u == "gib") return double(kGiB);
  if (u == "t" || u == "tb" || u == "tib") return double(kTiB);
  return std::nullopt;
}

}  // namespace

std::optional<Bytes> try_parse_bytes(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  std::string number;
  bool seen_digit = false, seen_dot = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number += c;
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      number += c;
      seen_dot = true;
    } else if (c == ',' && seen_digit && !seen_dot) {
      continue;  // thousands separator
    } else {
      break;
    }
  }
  if (!seen_digit) return std::nullopt;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  std::size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  const auto multiplier = unit_multiplier(text.substr(i, end - i));
  if (!multiplier) return std::nullopt;
  const double value = std::stod(number) * *multiplier;
  if (!std::isfinite(value) || value > 1.8e19) return std::nullopt;
  return Bytes(std::llround(value));
}

Bytes parse_bytes(std::string_view text) {
  if (auto bytes = try_parse_bytes(text)) return *bytes;
  throw ParseError(
      "'" + std::string(text) +
      "' is not a byte count: write a number with an optional unit, e.g. "
      "\"8 GiB\", \"512 MiB\", \"3.00 GB\" (units are powers of 1024) or "
      "\"2359296\" (bytes)");
}

}  // namespace mold
