#include "model/byte_level.hpp"

#include "model/utf8.hpp"

namespace mold {

namespace {
bool stands_for_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
         (b >= 0xae && b <= 0xff);
}
}  // namespace

ByteLevelAlphabet::ByteLevelAlphabet() {
  byte_of_.fill(-1);
  char32_t next_extra = 0x100;
  for (unsigned b = 0; b < 256; ++b) {
    const char32_t cp = stands_for_itself(b) ? b : next_extra++;
    utf8::append(text_[b], cp);
    byte_of_[cp] = static_cast<std::int16_t>(b);
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::string ByteLevelAlphabet::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += text_[static_cast<unsigned char>(c)];
  return out;
}

bool ByteLevelAlphabet::decode(std::string_view token, std::string& out) const {
  const std::size_t mark = out.size();
  std::size_t i = 0;
  while (i < token.size()) {
    if (utf8::sequence_length(token, i) == 0) {
      out.resize(mark);
      return false;
    }
    const char32_t cp = utf8::next(token, i);
    if (cp >= byte_of_.size() || byte_of_[cp] < 0) {
      out.resize(mark);
      return false;
    }
    out += static_cast<char>(byte_of_[cp]);
  }
  return true;
}

}  // namespace mold
