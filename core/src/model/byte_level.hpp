#pragma once
// The byte-level alphabet of GPT-2 style BPE: each of the 256 byte values is
// written as one printable code point, so that a vocabulary of strings can
// hold any byte sequence. Bytes that are printable Latin-1 ('!'..'~',
// U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 (control
// characters, space, DEL, U+0080..U+00A0, soft hyphen) become U+0100.. in
// byte order, so that space is 'Ġ' (U+0120), '\n' is 'Ċ' and '\t' is 'ĉ'.
// Private to mold_torch.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mold {

class ByteLevelAlphabet {
 public:
  /// The one alphabet (built on first use; thread-safe).
  static const ByteLevelAlphabet& get();

  /// The UTF-8 of the code point that stands for `byte`.
  const std::string& text(unsigned char byte) const { return text_[byte]; }

  /// `bytes` written in the alphabet.
  std::string encode(std::string_view bytes) const;

  /// Appends the bytes `token` (UTF-8 in the alphabet) stands for to `out`;
  /// false, leaving `out` as it was, when a character of `token` is not in
  /// the alphabet.
  bool decode(std::string_view token, std::string& out) const;

 private:
  ByteLevelAlphabet();
  std::array<std::string, 256> text_;
  /// Code point (below 512) -> byte, or -1.
  std::array<std::int16_t, 512> byte_of_{};
};

}  // namespace mold
