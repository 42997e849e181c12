#include "model/regex_split.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <new>

#include "model/utf8.hpp"
#include "mold/base/error.hpp"

namespace mold {

namespace {

/// Unicode White_Space (PropList.txt) as the inside of a PCRE2 class.
constexpr const char* kWhiteSpace =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0)
    return fmt::format("PCRE2 error {}", code);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string oniguruma_to_pcre2(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  std::size_t class_start = 0;  // offset of the first item of the class
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 >= pattern.size())
        throw InvalidArgument("the pattern ends in a lone backslash");
      const char e = pattern[++i];
      switch (e) {
      case 's':
        out += in_class ? std::string(kWhiteSpace)
                        : fmt::format("[{}]", kWhiteSpace);
        continue;
      case 'S':
        if (in_class)
          throw InvalidArgument(fmt::format(
              "the pattern has \\S inside a character class (offset {}), "
              "which PCRE2 cannot express as Oniguruma means it",
              i - 1));
        out += fmt::format("[^{}]", kWhiteSpace);
        continue;
      case 'w':
      case 'W':
      case 'b':
      case 'B':
      case 'h':
      case 'H':
        throw InvalidArgument(fmt::format(
            "the pattern uses \\{} (offset {}), which means something else "
            "in Oniguruma (Hugging Face's engine) than in PCRE2; a pattern "
            "with it is not supported",
            e, i - 1));
      default:
        out += c;
        out += e;
        continue;
      }
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      class_start = i + 1;
      continue;
    }
    if (in_class) {
      if (c == ']' && i != class_start) {
        in_class = false;
      } else if (c == '[') {
        const std::size_t close = pattern.find(":]", i);
        if (i + 1 < pattern.size() && pattern[i + 1] == ':' &&
            close != std::string_view::npos) {
          out.append(pattern.substr(i, close + 2 - i));  // [:alpha:]
          i = close + 1;
          continue;
        }
        throw InvalidArgument(fmt::format(
            "the pattern nests a character class (offset {}), an Oniguruma "
            "set operation that PCRE2 does not have",
            i));
      } else if (c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&') {
        throw InvalidArgument(fmt::format(
            "the pattern intersects character classes ('&&', offset {}), an "
            "Oniguruma set operation that PCRE2 does not have",
            i));
      }
    }
    out += c;
  }
  if (in_class)
    throw InvalidArgument("the pattern has a character class with no ']'");
  return out;
}

struct RegexSplit::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  bool jit = false;
  ~Compiled() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

RegexSplit::RegexSplit(std::string_view pattern, bool literal)
    : compiled_(std::make_unique<Compiled>()) {
  const std::string translated =
      literal ? std::string(pattern) : oniguruma_to_pcre2(pattern);
  std::uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                    translated.size(), options, &error, &offset, nullptr);
  if (compiled_->code == nullptr)
    throw InvalidArgument(
        fmt::format("the pattern does not compile (at offset {} of its PCRE2 "
                    "form '{}'): {}",
                    offset, translated, pcre2_message(error)));
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
  // The default match limit (10 million backtracking steps) stops the Qwen
  // pattern on a run of 10 MB of spaces: "\s*[\r\n]+" tries the whole run
  // once before "\s+(?!\S)" takes it. That work is linear in the run, so
  // the limit is lifted to what a 32-bit count allows; the interpreter (no
  // JIT) may use up to 256 MiB of heap for backtracking.
  compiled_->context = pcre2_match_context_create(nullptr);
  if (compiled_->context == nullptr) throw std::bad_alloc();
  pcre2_set_match_limit(compiled_->context, 0xffffffffu);
  pcre2_set_heap_limit(compiled_->context, 256u * 1024u);  // KiB
}

RegexSplit::~RegexSplit() = default;
RegexSplit::RegexSplit(RegexSplit&&) noexcept = default;
RegexSplit& RegexSplit::operator=(RegexSplit&&) noexcept = default;

bool RegexSplit::jit() const { return compiled_->jit; }

RegexSplit::Scanner::Scanner(const RegexSplit& split, std::string_view text)
    : split_(split),
      text_(text),
      data_(pcre2_match_data_create_from_pattern(split.compiled_->code,
                                                 nullptr)) {
  if (data_ == nullptr) throw std::bad_alloc();
}

RegexSplit::Scanner::~Scanner() {
  pcre2_match_data_free(static_cast<pcre2_match_data*>(data_));
}

bool RegexSplit::Scanner::next(std::string_view& piece) {
  if (!pending_.empty()) {
    piece = pending_;
    pending_ = {};
    return true;
  }
  auto* data = static_cast<pcre2_match_data*>(data_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
  while (search_ < text_.size()) {
    const int rc =
        pcre2_match(split_.compiled_->code, subject, text_.size(), search_,
                    PCRE2_NO_UTF_CHECK, data, split_.compiled_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error(fmt::format(
          "the pre-tokenizer's pattern failed on the text at byte {}: {}",
          search_, pcre2_message(rc)));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const std::size_t start = ovector[0], end = ovector[1];
    if (end <= start) {
      // An empty match cuts nothing: search again one character on.
      const std::size_t length =
          start < text_.size() ? utf8::sequence_length(text_, start) : 1;
      search_ = std::max(start + (length == 0 ? 1 : length), search_ + 1);
      continue;
    }
    const std::string_view match = text_.substr(start, end - start);
    const std::size_t gap_start = piece_start_;
    piece_start_ = search_ = end;
    if (start > gap_start) {
      piece = text_.substr(gap_start, start - gap_start);
      pending_ = match;
    } else {
      piece = match;
    }
    return true;
  }
  if (piece_start_ < text_.size()) {
    piece = text_.substr(piece_start_);
    piece_start_ = search_ = text_.size();
    return true;
  }
  return false;
}

void RegexSplit::split(std::string_view text,
                       std::vector<std::string_view>& out) const {
  Scanner scanner(*this, text);
  std::string_view piece;
  while (scanner.next(piece)) out.push_back(piece);
}

}  // namespace mold
