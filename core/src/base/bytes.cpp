#include "mold/base/bytes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"

namespace mold {

std::string format_bytes(Bytes bytes) {
  if (bytes <= kKiB) return fmt::format("{} bytes", bytes);
  if (bytes <= kMiB) return fmt::format("{:.2f} KiB", bytes / double(kKiB));
  if (bytes <= kGiB) return fmt::format("{:.2f} MiB", bytes / double(kMiB));
  return fmt::format("{:.2f} GiB", bytes / double(kGiB));
}

std::string format_byte_change(double bytes, bool plus) {
  const std::string sign = bytes < 0 ? "-" : plus ? "+" : "";
  const double magnitude = std::min(std::abs(bytes), double(kMaxBytes));
  return sign + format_bytes(Bytes(std::llround(magnitude)));
}

namespace {

std::optional<double> unit_multiplier(std::string_view unit) {
  const std::string u = ascii_lower(unit);
  if (u.empty() || u == "b" || u == "byte" || u == "bytes") return 1.0;
  // PyTorch's older messages print "GB" for 2^30: every unit is binary.
  if (u == "k" || u == "kb" || u == "kib") return double(kKiB);
  if (u == "m" || u == "mb" || u == "mib") return double(kMiB);
  if (u == "g" || u == "gb" || u == "gib") return double(kGiB);
  if (u == "t" || u == "tb" || u == "tib") return double(kTiB);
  return std::nullopt;
}

}  // namespace

namespace {

enum class ByteParse { ok, not_a_number, negative, unknown_unit, too_large };

/// The number at the start of `text` (after spaces): digits with optional
/// thousands commas, an optional fraction and an optional exponent; `end`
/// receives where it stops. nullopt when there is none.
std::optional<long double> leading_number(std::string_view text,
                                          std::size_t& end, bool& negative) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  negative = i < text.size() && text[i] == '-';
  if (negative || (i < text.size() && text[i] == '+')) ++i;
  std::string number;
  bool digits = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number += c;
      digits = true;
    } else if (c == ',' && digits && number.find('.') == std::string::npos &&
               i + 1 < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      continue;  // thousands separator
    } else if (c == '.' && number.find('.') == std::string::npos) {
      number += c;
    } else {
      break;
    }
  }
  if (!digits) return std::nullopt;
  // An exponent only when digits follow it: "5e" is 5 and a unit "e".
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    std::string exponent = "e";
    if (j < text.size() && (text[j] == '+' || text[j] == '-'))
      exponent += text[j++];
    const std::size_t first = j;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      exponent += text[j++];
    if (j > first) {
      number += exponent;
      i = j;
    }
  }
  end = i;
  errno = 0;
  char* stop = nullptr;
  const long double value = std::strtold(number.c_str(), &stop);
  if (stop == number.c_str()) return std::nullopt;
  return value;  // may be inf for "1e999999"
}

ByteParse parse_byte_count(std::string_view text, Bytes& out) {
  std::size_t i = 0;
  bool negative = false;
  const auto number = leading_number(text, i, negative);
  if (!number) return ByteParse::not_a_number;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  std::size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  const auto multiplier = unit_multiplier(text.substr(i, end - i));
  if (!multiplier) return ByteParse::unknown_unit;
  if (negative && *number != 0) return ByteParse::negative;
  const long double value = *number * (long double)(*multiplier);
  if (!std::isfinite(value) || value > (long double)(kMaxBytes))
    return ByteParse::too_large;
  out = Bytes(std::llround(value));
  return ByteParse::ok;
}

}  // namespace

bool is_byte_unit(std::string_view word) {
  return !word.empty() && unit_multiplier(word).has_value();
}

std::optional<Bytes> try_parse_bytes(std::string_view text) {
  Bytes bytes = 0;
  if (parse_byte_count(text, bytes) != ByteParse::ok) return std::nullopt;
  return bytes;
}

Bytes parse_bytes(std::string_view text) {
  Bytes bytes = 0;
  const std::string quoted = "'" + std::string(text) + "'";
  switch (parse_byte_count(text, bytes)) {
  case ByteParse::ok:
    return bytes;
  case ByteParse::negative:
    throw ParseError(quoted + " is negative: a byte count is 0 or more");
  case ByteParse::too_large:
    throw ParseError(
        fmt::format("{} is more bytes than mold counts (at most {}, 8 EiB)",
                    quoted, kMaxBytes));
  case ByteParse::not_a_number:
  case ByteParse::unknown_unit:
    break;
  }
  throw ParseError(
      quoted +
      " is not a byte count: write a number with an optional unit, e.g. "
      "\"8 GiB\", \"512 MiB\", \"3.00 GB\" (units are powers of 1024) or "
      "\"2359296\" (bytes)");
}

Bytes bytes_from_double(double value, std::string_view what) {
  if (!std::isfinite(value) || value < 0 || value > double(kMaxBytes))
    throw InvalidArgument(fmt::format(
        "{} is {:g} bytes, which is not a byte count mold can represent (0 to "
        "{}): check the sizes it was computed from",
        what, value, kMaxBytes));
  return Bytes(std::llround(value));
}

Bytes checked_multiply(Bytes a, Bytes b, std::string_view what) {
  if (a != 0 && b > kMaxBytes / a)
    throw InvalidArgument(fmt::format(
        "{}: {} x {} is more than {} bytes (8 EiB): the sizes are wrong", what,
        a, b, kMaxBytes));
  return a * b;
}

}  // namespace mold
