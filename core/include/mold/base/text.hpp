#pragma once
/// Text from outside (plugins, error messages, input files) made safe to show:
/// control characters escaped so that no input can drive a terminal, and a
/// check for valid UTF-8 before text goes into JSON.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mold {

/// `text` with every control character (below 0x20 except newline and tab,
/// and DEL) written as \xHH, and bytes that are not valid UTF-8 as \xHH too;
/// valid UTF-8 beyond ASCII is kept.
std::string escape_control(std::string_view text);

/// Whether `text` is valid UTF-8 (no overlong forms, no surrogates, nothing
/// past U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// "[16, 56, 56]": integers as a JSON-style list, for messages.
std::string list_text(const std::vector<std::int64_t>& values);

}  // namespace mold
