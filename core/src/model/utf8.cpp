#include "model/utf8.hpp"

namespace mold::utf8 {

namespace {

unsigned char byte_at(std::string_view text, std::size_t i) {
  return static_cast<unsigned char>(text[i]);
}

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

/// The bounds of the second byte of a sequence whose lead byte is `lead`
/// (Unicode table 3-7, "Well-Formed UTF-8 Byte Sequences"); the third and
/// fourth bytes are plain continuation bytes.
void second_byte_range(unsigned char lead, unsigned char& low,
                       unsigned char& high) {
  low = 0x80;
  high = 0xbf;
  if (lead == 0xe0) low = 0xa0;   // no overlong 3-byte forms
  if (lead == 0xed) high = 0x9f;  // no surrogates
  if (lead == 0xf0) low = 0x90;   // no overlong 4-byte forms
  if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
}

/// The declared length of a sequence led by `lead`, 0 when `lead` can lead
/// none.
std::size_t declared_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/// How many bytes from text[i] form the longest prefix of a well-formed
/// sequence (the whole sequence when it is complete; at least 1).
std::size_t valid_prefix(std::string_view text, std::size_t i, bool& complete) {
  const unsigned char lead = byte_at(text, i);
  const std::size_t length = declared_length(lead);
  complete = false;
  if (length == 0) return 1;
  if (length == 1) {
    complete = true;
    return 1;
  }
  unsigned char low = 0, high = 0;
  second_byte_range(lead, low, high);
  std::size_t k = 1;
  for (; k < length; ++k) {
    if (i + k >= text.size()) return k;
    const unsigned char c = byte_at(text, i + k);
    if (k == 1 ? (c < low || c > high) : !is_continuation(c)) return k;
  }
  complete = true;
  return length;
}

}  // namespace

std::size_t sequence_length(std::string_view text, std::size_t i) {
  bool complete = false;
  const std::size_t n = valid_prefix(text, i, complete);
  return complete ? n : 0;
}

std::optional<std::size_t> first_invalid(std::string_view text) {
  std::size_t i = 0;
  const std::size_t size = text.size();
  while (i < size) {
    // ASCII eight bytes at a time: most prompts are mostly ASCII.
    while (i + 8 <= size) {
      unsigned long long word = 0;
      for (int k = 0; k < 8; ++k)
        word |= static_cast<unsigned long long>(byte_at(text, i + k))
                << (8 * k);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= size) break;
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

char32_t next(std::string_view text, std::size_t& i) {
  const unsigned char lead = byte_at(text, i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  const std::size_t length = declared_length(lead);
  char32_t code = lead & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07);
  for (std::size_t k = 1; k < length; ++k)
    code = (code << 6) | (byte_at(text, i + k) & 0x3f);
  i += length;
  return code;
}

char32_t previous(std::string_view text, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && is_continuation(byte_at(text, start))) --start;
  return next(text, start);
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::string repair(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    bool complete = false;
    const std::size_t n = valid_prefix(bytes, i, complete);
    if (complete)
      out.append(bytes.data() + i, n);
    else
      out += "\xef\xbf\xbd";  // U+FFFD for the maximal subpart
    i += n;
  }
  return out;
}

bool is_white_space(char32_t cp) {
  // The White_Space property of Unicode's PropList.txt (stable since 6.3).
  return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

}  // namespace mold::utf8
