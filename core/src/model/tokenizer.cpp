#include "mold/model/tokenizer.hpp"

#include <fmt/format.h>

#include <unordered_map>

#include "model/added_token_matcher.hpp"
#include "model/bpe_model.hpp"
#include "model/byte_level.hpp"
#include "model/nfc.hpp"
#include "model/regex_split.hpp"
#include "model/tokenizer_files.hpp"
#include "model/utf8.hpp"

namespace mold {

namespace {
std::string file_message(const std::filesystem::path& file,
                         const std::string& key, const std::string& problem) {
  if (key.empty()) return fmt::format("{}: {}", file.string(), problem);
  return fmt::format("{}: key '{}': {}", file.string(), key, problem);
}
}  // namespace

TokenizerFileError::TokenizerFileError(std::filesystem::path file,
                                       std::string key,
                                       const std::string& problem)
    : Error(file_message(file, key, problem)),
      file_(std::move(file)),
      key_(std::move(key)) {}

struct BpeTokenizer::Impl {
  TokenizerSpec spec;
  std::unordered_map<std::string, std::int32_t> added_ids;
  /// Per id: whether decode(skip_special) leaves it out.
  std::vector<bool> special;
  AddedTokenMatcher raw_tokens;         // matched before normalization
  AddedTokenMatcher normalized_tokens;  // matched after it
  std::vector<RegexSplit> splits;
  std::unique_ptr<BpeModel> model;

  void encode_text(std::string_view text, std::vector<std::int32_t>& ids) const;
  void encode_pieces(std::size_t step, std::string_view text,
                     std::vector<std::int32_t>& ids) const;
};

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& directory) {
  return load(directory / "tokenizer.json",
              directory / "tokenizer_config.json");
}

BpeTokenizer BpeTokenizer::load(
    const std::filesystem::path& tokenizer_json,
    const std::filesystem::path& tokenizer_config_json) {
  auto impl = std::make_unique<Impl>();
  impl->spec = read_tokenizer_files(tokenizer_json, tokenizer_config_json);
  TokenizerSpec& spec = impl->spec;
  for (std::size_t i = 0; i < spec.splits.size(); ++i) {
    try {
      impl->splits.emplace_back(spec.splits[i].pattern, spec.splits[i].literal);
    } catch (const InvalidArgument& e) {
      throw TokenizerFileError(tokenizer_json, "pre_tokenizer",
                               fmt::format("Split {} of {}: {}", i + 1,
                                           spec.splits.size(), e.what()));
    }
  }
  impl->special.assign(spec.tokens.size(), false);
  std::vector<AddedTokenMatcher::Entry> raw, normalized;
  for (const AddedToken& token : spec.added) {
    impl->added_ids.emplace(token.content, token.id);
    impl->special[token.id] = token.special;
    AddedTokenMatcher::Entry entry{token.content, token.id, token.single_word,
                                   token.lstrip, token.rstrip};
    if (token.normalized) {
      if (spec.nfc) entry.text = to_nfc(entry.text);
      normalized.push_back(std::move(entry));
    } else {
      raw.push_back(std::move(entry));
    }
  }
  impl->raw_tokens = AddedTokenMatcher(std::move(raw));
  impl->normalized_tokens = AddedTokenMatcher(std::move(normalized));
  impl->model = std::make_unique<BpeModel>(spec.byte_ids, spec.merges,
                                           &spec.vocab, spec.ignore_merges);
  spec.merges.clear();
  spec.merges.shrink_to_fit();
  return BpeTokenizer(std::move(impl));
}

void BpeTokenizer::Impl::encode_pieces(std::size_t step, std::string_view text,
                                       std::vector<std::int32_t>& ids) const {
  if (step == splits.size()) {
    model->encode(text, ids);
    return;
  }
  RegexSplit::Scanner scanner(splits[step], text);
  std::string_view piece;
  while (scanner.next(piece)) encode_pieces(step + 1, piece, ids);
}

void BpeTokenizer::Impl::encode_text(std::string_view text,
                                     std::vector<std::int32_t>& ids) const {
  std::string composed;
  if (spec.nfc && !is_nfc(text)) {
    composed = to_nfc(text);
    text = composed;
  }
  normalized_tokens.split(
      text, [&](std::string_view run) { encode_pieces(0, run, ids); },
      [&](std::int32_t id) { ids.push_back(id); });
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view utf8) const {
  if (const auto offset = utf8::first_invalid(utf8))
    throw InvalidArgument(fmt::format(
        "the text is not valid UTF-8 at byte offset {} (0x{:02x} starts no "
        "well-formed character): give UTF-8 text",
        *offset, static_cast<unsigned char>(utf8[*offset])));
  std::vector<std::int32_t> ids;
  ids.reserve(utf8.size() / 4 + 4);
  impl_->raw_tokens.split(
      utf8, [&](std::string_view run) { impl_->encode_text(run, ids); },
      [&](std::int32_t id) { ids.push_back(id); });
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<std::int32_t>& ids,
                                 bool skip_special) const {
  const TokenizerSpec& spec = impl_->spec;
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (const std::int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= spec.tokens.size() ||
        !spec.has_token[id])
      throw InvalidArgument(fmt::format(
          "token id {} is no token of this tokenizer (its ids are 0 to {})", id,
          spec.tokens.size() - 1));
    if (skip_special && impl_->special[id]) continue;
    const std::string& token = spec.tokens[id];
    // A token whose characters are all in the byte-level alphabet stands for
    // those bytes; any other (an added token such as "<tool call>") for its
    // own text.
    if (!alphabet.decode(token, bytes)) bytes += token;
  }
  return utf8::repair(bytes);
}

std::optional<std::int32_t> BpeTokenizer::token_to_id(
    std::string_view token) const {
  const std::string key(token);
  if (const auto it = impl_->added_ids.find(key); it != impl_->added_ids.end())
    return it->second;
  if (const auto it = impl_->spec.vocab.find(key);
      it != impl_->spec.vocab.end())
    return it->second;
  return std::nullopt;
}

std::optional<std::string> BpeTokenizer::id_to_token(std::int32_t id) const {
  const TokenizerSpec& spec = impl_->spec;
  if (id < 0 || static_cast<std::size_t>(id) >= spec.tokens.size() ||
      !spec.has_token[id])
    return std::nullopt;
  return spec.tokens[id];
}

std::size_t BpeTokenizer::vocab_size() const { return impl_->spec.token_count; }

const std::vector<AddedToken>& BpeTokenizer::added_tokens() const {
  return impl_->spec.added;
}

std::optional<std::int32_t> BpeTokenizer::eos_token_id() const {
  return impl_->spec.eos;
}
std::optional<std::int32_t> BpeTokenizer::pad_token_id() const {
  return impl_->spec.pad;
}
std::optional<std::int32_t> BpeTokenizer::bos_token_id() const {
  return impl_->spec.bos;
}
std::optional<std::int64_t> BpeTokenizer::model_max_length() const {
  return impl_->spec.model_max_length;
}

void BpeTokenizer::set_cache_capacity(std::size_t words) {
  impl_->model->set_cache_capacity(words);
}

}  // namespace mold
