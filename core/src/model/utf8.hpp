#pragma once
// UTF-8 for the tokenizer: where the first invalid byte is, decoding one code
// point of text known to be valid, appending one, and the lossy repair a
// decoder needs for byte sequences that end mid-character. Private to
// mold_torch.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mold::utf8 {

/// The byte offset of the first byte that does not start a well-formed UTF-8
/// sequence (overlong forms, surrogates, code points past U+10FFFF and
/// truncated sequences are ill-formed); nullopt when all of `text` is valid.
std::optional<std::size_t> first_invalid(std::string_view text);

/// The length (1 to 4) of the well-formed sequence at text[i], 0 if there is
/// none.
std::size_t sequence_length(std::string_view text, std::size_t i);

/// Decodes the code point at text[i] of valid UTF-8 and advances `i` past it.
char32_t next(std::string_view text, std::size_t& i);

/// Decodes the code point that ends at text[end] (exclusive) of valid UTF-8.
char32_t previous(std::string_view text, std::size_t end);

/// Appends `code_point` (at most U+10FFFF, no surrogate) to `out`.
void append(std::string& out, char32_t code_point);

/// `bytes` with every maximal ill-formed subsequence replaced by U+FFFD, the
/// practice Unicode recommends (chapter 3, "U+FFFD Substitution of Maximal
/// Subparts") and the one of Rust's String::from_utf8_lossy.
std::string repair(std::string_view bytes);

/// Whether `code_point` has the Unicode White_Space property.
bool is_white_space(char32_t code_point);

}  // namespace mold::utf8
