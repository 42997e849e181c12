#pragma once
/// Byte-level BPE tokenizers as Hugging Face's tokenizers describes them in
/// tokenizer.json and tokenizer_config.json: Qwen3's (Z-Image's text encoder)
/// and the other GPT-2 style ones. Text -> ids and back, with the added and
/// special tokens; no libtorch. See docs/tokenizer.md.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/base/error.hpp"

namespace mold {

/// A tokenizer file that cannot be read or is not a tokenizer mold supports.
/// The message names the file, the key ("model.merges[12]") and what to do.
class TokenizerFileError : public Error {
 public:
  TokenizerFileError(std::filesystem::path file, std::string key,
                     const std::string& problem);
  const std::filesystem::path& file() const { return file_; }
  /// The JSON key path at fault; empty when the whole file is.
  const std::string& key() const { return key_; }

 private:
  std::filesystem::path file_;
  std::string key_;
};

/// A token matched in the input text before anything else runs
/// (tokenizer.json's "added_tokens", tokenizer_config.json's
/// "added_tokens_decoder").
struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  /// Special tokens are left out by decode(ids, skip_special = true).
  bool special = false;
  /// Only matched as a whole word.
  bool single_word = false;
  /// Takes in the whitespace on its left / right.
  bool lstrip = false;
  bool rstrip = false;
  /// Matched in the normalized text rather than the raw text.
  bool normalized = false;
};

/// A byte-level BPE tokenizer. encode() and decode() are const and safe to
/// call from several threads at once (the word cache is locked).
class BpeTokenizer {
 public:
  /// Loads tokenizer.json and tokenizer_config.json. Throws
  /// TokenizerFileError for a file that is missing, unreadable, not JSON, or
  /// holds something unsupported or inconsistent.
  static BpeTokenizer load(const std::filesystem::path& tokenizer_json,
                           const std::filesystem::path& tokenizer_config_json);
  /// Loads `directory`/tokenizer.json and `directory`/tokenizer_config.json
  /// (a diffusers pipeline's tokenizer/ folder).
  static BpeTokenizer load(const std::filesystem::path& directory);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  /// The ids of `utf8`: added tokens first (leftmost, longest), then for the
  /// text between them the normalizer, the pre-tokenizer's pieces and BPE on
  /// each piece. No special tokens are added around the text. Throws
  /// InvalidArgument naming the byte offset when `utf8` is not valid UTF-8.
  std::vector<std::int32_t> encode(std::string_view utf8) const;

  /// The text of `ids`: added tokens as their content (special ones left out
  /// with `skip_special`), the others' bytes joined and read as UTF-8, bytes
  /// that do not form UTF-8 replaced by U+FFFD. Throws InvalidArgument for an
  /// id that is no token.
  std::string decode(const std::vector<std::int32_t>& ids,
                     bool skip_special = false) const;

  /// The id of a token as the vocabulary spells it ("Ġfox", "<|im_end|>").
  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  /// The token of `id`, as the vocabulary spells it; nullopt when none.
  std::optional<std::string> id_to_token(std::int32_t id) const;
  /// The number of tokens, the added ones included (151,669 for Qwen3).
  std::size_t vocab_size() const;

  /// The added tokens, by id.
  const std::vector<AddedToken>& added_tokens() const;
  /// tokenizer_config.json's eos_token / pad_token / bos_token, when set.
  std::optional<std::int32_t> eos_token_id() const;
  std::optional<std::int32_t> pad_token_id() const;
  std::optional<std::int32_t> bos_token_id() const;
  /// tokenizer_config.json's model_max_length; nullopt when absent or a
  /// placeholder for "no limit" (transformers writes 1e30).
  std::optional<std::int64_t> model_max_length() const;

  /// How many words (pieces of the pre-tokenizer) the BPE cache keeps; 0
  /// turns it off. The default is 65,536.
  void set_cache_capacity(std::size_t words);

 private:
  struct Impl;
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mold
