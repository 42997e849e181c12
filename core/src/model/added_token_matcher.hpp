#pragma once
// Finds a tokenizer's added tokens (<|im_start|>, <think>, ...) in text, as
// Hugging Face's tokenizers does before anything else runs: leftmost match
// first, the longest token where several start at one place, whole words only
// for a `single_word` token (a rejected match is plain text), and whitespace
// taken in on the left (`lstrip`) or right (`rstrip`) when the token asks.
// Private to mold_torch.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/model/tokenizer.hpp"

namespace mold {

class AddedTokenMatcher {
 public:
  /// One token to find: `text` is what is searched for (the content, or its
  /// normalized form for a token matched after normalization).
  struct Entry {
    std::string text;
    std::int32_t id = 0;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
  };

  /// A found token: text[start, end) (whitespace taken in included) is
  /// token `id`.
  struct Match {
    std::size_t start = 0;
    std::size_t end = 0;
    std::int32_t id = 0;
  };

  AddedTokenMatcher() = default;
  /// Entries with empty text are ignored.
  explicit AddedTokenMatcher(std::vector<Entry> entries);

  bool empty() const { return entries_.empty(); }

  /// Splits `text` (valid UTF-8) into the runs between tokens and the tokens:
  /// calls `on_text(std::string_view)` for each non-empty run and
  /// `on_token(std::int32_t)` for each token, in order.
  template <class OnText, class OnToken>
  void split(std::string_view text, OnText&& on_text,
             OnToken&& on_token) const {
    std::size_t done = 0, search = 0;
    while (true) {
      const std::optional<Match> m = find(text, search, done);
      if (!m) break;
      if (m->start > done) on_text(text.substr(done, m->start - done));
      on_token(m->id);
      done = search = m->end;
    }
    if (done < text.size()) on_text(text.substr(done));
  }

 private:
  /// The next match that starts at or after `search`; `done` is where the
  /// previous match ended (lstrip takes in no whitespace before it).
  std::optional<Match> find(std::string_view text, std::size_t search,
                            std::size_t done) const;

  std::vector<Entry> entries_;
  /// Entries by their first byte, longest text first.
  std::vector<std::uint32_t> by_first_byte_[256];
};

}  // namespace mold
