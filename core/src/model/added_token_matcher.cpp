#include "model/added_token_matcher.hpp"

#include <unicode/uchar.h>

#include <algorithm>

#include "model/utf8.hpp"

namespace mold {

namespace {

/// A character of a word as Unicode's \w means it (UTS #18: Alphabetic,
/// marks, decimal digits, connector punctuation, Join_Control).
bool is_word_character(char32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) ||
      u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
    return true;
  const std::uint32_t category = U_MASK(u_charType(c));
  return (category & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<Entry> entries) {
  for (auto& entry : entries)
    if (!entry.text.empty()) entries_.push_back(std::move(entry));
  for (std::uint32_t i = 0; i < entries_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(entries_[i].text[0])].push_back(
        i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](std::uint32_t a, std::uint32_t b) {
                       return entries_[a].text.size() > entries_[b].text.size();
                     });
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::find(
    std::string_view text, std::size_t search, std::size_t done) const {
  if (entries_.empty()) return std::nullopt;
  for (std::size_t i = search; i < text.size(); ++i) {
    const auto& candidates =
        by_first_byte_[static_cast<unsigned char>(text[i])];
    if (candidates.empty()) continue;
    const Entry* found = nullptr;
    for (const std::uint32_t index : candidates) {
      const Entry& entry = entries_[index];
      if (text.compare(i, entry.text.size(), entry.text) == 0) {
        found = &entry;
        break;
      }
    }
    if (found == nullptr) continue;
    Match m{i, i + found->text.size(), found->id};
    if (found->single_word) {
      const bool word_before =
          m.start > 0 && is_word_character(utf8::previous(text, m.start));
      std::size_t after = m.end;
      const bool word_after =
          m.end < text.size() && is_word_character(utf8::next(text, after));
      if (word_before || word_after) {
        // Not a whole word: the matched text stays plain text.
        i = m.end - 1;
        continue;
      }
    }
    if (found->lstrip) {
      while (m.start > done &&
             utf8::is_white_space(utf8::previous(text, m.start))) {
        std::size_t back = m.start - 1;
        while (back > 0 &&
               (static_cast<unsigned char>(text[back]) & 0xc0) == 0x80)
          --back;
        m.start = back;
      }
    }
    if (found->rstrip) {
      while (m.end < text.size()) {
        std::size_t next = m.end;
        if (!utf8::is_white_space(utf8::next(text, next))) break;
        m.end = next;
      }
    }
    return m;
  }
  return std::nullopt;
}

}  // namespace mold
