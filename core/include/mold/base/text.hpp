#pragma once
/// Text from outside (plugins, error messages, input files) made safe to show:
/// control characters escaped so that no input can drive a terminal, and a
/// check for valid UTF-8 before text goes into JSON; and the small string
/// helpers the library shares.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mold {

/// `text` with every control character (below 0x20 except newline and tab,
/// and DEL) written as \xHH, and bytes that are not valid UTF-8 as \xHH too;
/// valid UTF-8 beyond ASCII is kept.
std::string escape_control(std::string_view text);

/// A value from outside quoted back in a message: escape_control() of at
/// most its first `max_chars` characters (whole UTF-8 sequences), and, when
/// it is longer, "..." and how long it was ("123456... (100000 bytes)"), so
/// that no input makes a message as long as itself.
std::string shown_value(std::string_view text, std::size_t max_chars = 64);

/// Whether `text` is valid UTF-8 (no overlong forms, no surrogates, nothing
/// past U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// "[16, 56, 56]": integers as a JSON-style list, for messages.
std::string list_text(const std::vector<std::int64_t>& values);

/// "a, b, c" ("" for none).
std::string join_names(const std::vector<std::string>& names);

bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);

/// The deepest nesting of arrays and objects in JSON `text` (strings
/// skipped), by a scan that never recurses: deep documents are refused before
/// a parser or a message's dump() recurses into them.
std::size_t json_nesting_depth(std::string_view text);

/// The nesting every reader of JSON from outside accepts: configs, tokenizer
/// files, safetensors headers, reports and request bodies nest 5 or less.
constexpr std::size_t kMaxJsonNesting = 64;

/// `text` with ASCII letters in lower case (other bytes kept).
std::string ascii_lower(std::string_view text);

}  // namespace mold
