#pragma once
// The pre-tokenizer's Split step: a regular expression from tokenizer.json,
// compiled with PCRE2 (UTF and Unicode properties, JIT when the library has
// it), that cuts text into pieces the BPE model sees one at a time. Hugging
// Face's tokenizers compiles these patterns with Oniguruma, so a pattern is
// first rewritten where the two engines read the same escape differently.
// Private to mold_torch.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mold {

/// `pattern` (Oniguruma syntax, as tokenizer.json's Split holds it) rewritten
/// for PCRE2: `\s` and `\S` become explicit classes of Unicode White_Space
/// (Oniguruma's meaning; PCRE2's `\s` also matches U+180E). Throws
/// InvalidArgument for escapes whose meaning differs and that are not
/// rewritten (`\w`, `\W`, `\b`, `\B`, `\h`, `\H`) and for nested classes.
std::string oniguruma_to_pcre2(std::string_view pattern);

/// A Split with behaviour "Isolated": each match is a piece, and so is the
/// text between two matches. Immutable after construction and safe to use from
/// several threads.
class RegexSplit {
 public:
  /// `pattern` is a regex (Oniguruma syntax) or, with `literal`, a plain
  /// string to split on. Throws InvalidArgument when it does not compile,
  /// naming the offset in the pattern and PCRE2's message.
  RegexSplit(std::string_view pattern, bool literal);
  ~RegexSplit();
  RegexSplit(RegexSplit&&) noexcept;
  RegexSplit& operator=(RegexSplit&&) noexcept;

  /// The pieces of one text (valid UTF-8), one at a time, in order; together
  /// they are the text. Empty matches cut nothing. The RegexSplit and the
  /// text must outlive it.
  class Scanner {
   public:
    Scanner(const RegexSplit& split, std::string_view text);
    ~Scanner();
    Scanner(const Scanner&) = delete;
    Scanner& operator=(const Scanner&) = delete;
    /// The next piece; false after the last. Throws Error when PCRE2 gives up
    /// (a resource limit), naming the byte offset.
    bool next(std::string_view& piece);

   private:
    const RegexSplit& split_;
    std::string_view text_;
    void* data_;                   // pcre2_match_data
    std::size_t piece_start_ = 0;  // where the text not yet given begins
    std::size_t search_ = 0;
    std::string_view pending_;  // a match that follows the gap just given
  };

  /// Appends all the pieces of `text` to `out`.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  /// Whether the pattern runs JIT-compiled.
  bool jit() const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace mold
