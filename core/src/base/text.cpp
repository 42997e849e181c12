#include "mold/base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace mold {

namespace {

/// The length of the valid UTF-8 sequence at text[i], or 0.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) {
    return static_cast<unsigned char>(text[k]);
  };
  const unsigned char c = byte(i);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
    code = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    code = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
      code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return length;
}

}  // namespace

std::string escape_control(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence(text, i);
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    if (length == 0 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += char(c);
    ++i;
  }
  return out;
}

std::string shown_value(std::string_view text, std::size_t max_chars) {
  std::size_t end = 0;
  for (std::size_t chars = 0; end < text.size() && chars < max_chars; ++chars)
    end += std::max<std::size_t>(utf8_sequence(text, end), 1);
  if (end >= text.size()) return escape_control(text);
  return fmt::format("{}... ({} bytes)", escape_control(text.substr(0, end)),
                     text.size());
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string list_text(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace mold
