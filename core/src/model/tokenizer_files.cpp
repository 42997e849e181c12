#include "model/tokenizer_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/json_document.hpp"
#include "model/byte_level.hpp"
#include "mold/base/file_io.hpp"

namespace mold {

namespace {

using nlohmann::json;

/// Larger files are refused before they are read: Qwen3's tokenizer.json is 11
/// MB, its merges.txt 1.7 MB, and JSON takes about 10x its size in memory.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{64} << 20;

/// What the ByteLevel pre-tokenizer splits with when its use_regex is true
/// (GPT-2's pattern).
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

using json_document::shown;

std::string join_key(const std::string& parent, const std::string& child) {
  return parent.empty() ? child : parent + "." + child;
}

/// One parsed file: its path for errors and its root object.
class File {
 public:
  explicit File(std::filesystem::path path) : path_(std::move(path)) {
    root_ = json_document::read_object(
        path_,
        {kMaxFileBytes, "a tokenizer file",
         "give the tokenizer/ folder of a diffusers checkpoint, which holds "
         "tokenizer.json (or vocab.json and merges.txt) and "
         "tokenizer_config.json"},
        [this](const std::string& problem) { fail("", problem); });
  }

  /// A document made in memory (a slow tokenizer's files converted);
  /// `path` names it in errors.
  File(std::filesystem::path path, json root)
      : path_(std::move(path)), root_(std::move(root)) {}

  [[noreturn]] void fail(const std::string& key,
                         const std::string& problem) const {
    throw TokenizerFileError(path_, key, problem);
  }

  const json& root() const { return root_; }

  /// Member `name` of `object` (at `key`), or nullptr when absent.
  const json* find(const json& object, const std::string& name) const {
    const auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
  }

  const json& require(const json& object, const std::string& key,
                      const std::string& name) const {
    const json* value = find(object, name);
    if (value == nullptr)
      fail(join_key(key, name),
           "is missing: the file is not a tokenizer file mold can read");
    return *value;
  }

  const json& require_object(const json& object, const std::string& key,
                             const std::string& name) const {
    const json& value = require(object, key, name);
    if (!value.is_object())
      fail(join_key(key, name), fmt::format("is {} ({}), not an object",
                                            value.type_name(), shown(value)));
    return value;
  }

  const json& require_array(const json& object, const std::string& key,
                            const std::string& name) const {
    const json& value = require(object, key, name);
    if (!value.is_array())
      fail(join_key(key, name), fmt::format("is {} ({}), not an array",
                                            value.type_name(), shown(value)));
    return value;
  }

  std::string string(const json& value, const std::string& key) const {
    if (!value.is_string())
      fail(key, fmt::format("is {} ({}), not a string", value.type_name(),
                            shown(value)));
    return value.get<std::string>();
  }

  std::string require_string(const json& object, const std::string& key,
                             const std::string& name) const {
    return string(require(object, key, name), join_key(key, name));
  }

  /// An optional boolean member; absent or null is `fallback`.
  bool flag(const json& object, const std::string& key, const std::string& name,
            bool fallback) const {
    const json* value = find(object, name);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_boolean())
      fail(join_key(key, name), fmt::format("is {} ({}), not true or false",
                                            value->type_name(), shown(*value)));
    return value->get<bool>();
  }

  std::int32_t id(const json& value, const std::string& key) const {
    bool ok = false;
    std::int64_t id = -1;
    if (value.is_number_unsigned()) {
      const auto u = value.get<std::uint64_t>();
      ok = u <= static_cast<std::uint64_t>(kMaxTokenId);
      id = static_cast<std::int64_t>(u);
    } else if (value.is_number_integer()) {
      id = value.get<std::int64_t>();
      ok = id >= 0 && id <= kMaxTokenId;
    }
    if (!ok)
      fail(key, fmt::format("is {}, not a token id: give a whole number from "
                            "0 to {}",
                            shown(value), kMaxTokenId));
    return static_cast<std::int32_t>(id);
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  json root_;
};

/// The component's "type" (for normalizer, pre_tokenizer, decoder, ...).
std::string type_of(const File& file, const json& component,
                    const std::string& key) {
  if (!component.is_object())
    file.fail(key, fmt::format("is {} ({}), not an object with a \"type\"",
                               component.type_name(), shown(component)));
  return file.require_string(component, key, "type");
}

void read_model(const File& file, TokenizerSpec& spec,
                std::vector<std::pair<std::string, std::int32_t>>& vocab) {
  const json& model = file.require_object(file.root(), "", "model");
  if (const json* type = file.find(model, "type")) {
    const std::string name = file.string(*type, "model.type");
    if (name != "BPE")
      file.fail("model.type",
                fmt::format("is '{}': mold reads BPE tokenizers only", name));
  }
  if (const json* dropout = file.find(model, "dropout");
      dropout != nullptr && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0))
    file.fail("model.dropout",
              fmt::format("is {}: BPE dropout (random merges) is for "
                          "training; mold encodes deterministically only",
                          shown(*dropout)));
  if (file.flag(model, "model", "byte_fallback", false))
    file.fail("model.byte_fallback",
              "is true: byte-fallback BPE (<0xNN> tokens) is not supported");
  for (const char* name : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* value = file.find(model, name);
    if (value != nullptr && !value->is_null() &&
        !(value->is_string() && value->get<std::string>().empty()))
      file.fail(join_key("model", name),
                fmt::format("is {}: BPE with a subword prefix or suffix is "
                            "not supported",
                            shown(*value)));
  }
  spec.ignore_merges = file.flag(model, "model", "ignore_merges", false);

  const json& entries = file.require_object(model, "model", "vocab");
  vocab.reserve(entries.size());
  for (const auto& [token, value] : entries.items()) {
    const std::string key =
        fmt::format("model.vocab[{}]", json_document::shown(json(token)));
    if (token.empty()) file.fail(key, "is an empty token");
    vocab.emplace_back(token, file.id(value, key));
  }
  if (vocab.empty()) file.fail("model.vocab", "is empty");
}

std::vector<AddedToken> read_added_tokens(const File& file) {
  std::vector<AddedToken> added;
  const json* list = file.find(file.root(), "added_tokens");
  if (list == nullptr || list->is_null()) return added;
  if (!list->is_array())
    file.fail("added_tokens",
              fmt::format("is {}, not an array", list->type_name()));
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string key = fmt::format("added_tokens[{}]", i);
    const json& entry = (*list)[i];
    if (!entry.is_object())
      file.fail(key, fmt::format("is {}, not an object", entry.type_name()));
    AddedToken token;
    token.id = file.id(file.require(entry, key, "id"), key + ".id");
    token.content = file.require_string(entry, key, "content");
    if (token.content.empty())
      file.fail(key + ".content", "is empty: an added token needs text");
    token.special = file.flag(entry, key, "special", false);
    token.single_word = file.flag(entry, key, "single_word", false);
    token.lstrip = file.flag(entry, key, "lstrip", false);
    token.rstrip = file.flag(entry, key, "rstrip", false);
    token.normalized = file.flag(entry, key, "normalized", !token.special);
    added.push_back(std::move(token));
  }
  return added;
}

/// tokenizer_config.json's added_tokens_decoder, merged into `added`.
void read_added_tokens_decoder(const File& config, const File& tokenizer,
                               std::vector<AddedToken>& added) {
  const json* table = config.find(config.root(), "added_tokens_decoder");
  if (table == nullptr || table->is_null()) return;
  if (!table->is_object())
    config.fail("added_tokens_decoder",
                fmt::format("is {}, not an object", table->type_name()));
  for (const auto& [id_text, entry] : table->items()) {
    const std::string key = fmt::format("added_tokens_decoder[{}]",
                                        json_document::shown(json(id_text)));
    const bool digits = !id_text.empty() && id_text.size() <= 8 &&
                        std::all_of(id_text.begin(), id_text.end(), [](char c) {
                          return c >= '0' && c <= '9';
                        });
    if (!digits || std::stoll(id_text) > kMaxTokenId)
      config.fail(key, fmt::format("is not a token id: the keys are whole "
                                   "numbers from 0 to {}",
                                   kMaxTokenId));
    const auto id = static_cast<std::int32_t>(std::stoll(id_text));
    if (!entry.is_object())
      config.fail(key, fmt::format("is {}, not an object", entry.type_name()));
    const std::string content = config.require_string(entry, key, "content");
    if (content.empty())
      config.fail(key + ".content", "is empty: an added token needs text");
    const auto same_id = std::find_if(
        added.begin(), added.end(), [&](const auto& t) { return t.id == id; });
    if (same_id != added.end()) {
      if (same_id->content != content)
        config.fail(
            key, fmt::format("is '{}' but {} has '{}' for id {}: the two files "
                             "are from different tokenizers",
                             content, tokenizer.path().filename().string(),
                             same_id->content, id));
      continue;  // tokenizer.json's flags stand
    }
    AddedToken token;
    token.id = id;
    token.content = content;
    token.special = config.flag(entry, key, "special", false);
    token.single_word = config.flag(entry, key, "single_word", false);
    token.lstrip = config.flag(entry, key, "lstrip", false);
    token.rstrip = config.flag(entry, key, "rstrip", false);
    token.normalized = config.flag(entry, key, "normalized", !token.special);
    added.push_back(std::move(token));
  }
}

/// The id table of vocabulary and added tokens; every conflict is an error.
void build_token_table(
    const File& file,
    const std::vector<std::pair<std::string, std::int32_t>>& vocab,
    std::vector<AddedToken>& added, TokenizerSpec& spec) {
  std::int64_t max_id = -1;
  for (const auto& entry : vocab)
    max_id = std::max<std::int64_t>(max_id, entry.second);
  for (const auto& token : added)
    max_id = std::max<std::int64_t>(max_id, token.id);
  const std::size_t entries = vocab.size() + added.size();
  if (static_cast<std::uint64_t>(max_id) >= 2 * entries + 1024)
    file.fail("model.vocab",
              fmt::format("has id {} but only {} tokens: ids this sparse are "
                          "not a real vocabulary",
                          max_id, entries));
  const auto size = static_cast<std::size_t>(max_id + 1);
  spec.tokens.assign(size, std::string());
  spec.has_token.assign(size, false);
  spec.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab) {
    if (spec.has_token[id])
      file.fail(
          fmt::format("model.vocab[{}]", json_document::shown(json(token))),
          fmt::format("has id {}, which '{}' has too", id, spec.tokens[id]));
    spec.tokens[id] = token;
    spec.has_token[id] = true;
    spec.vocab.emplace(token, id);
  }
  std::sort(added.begin(), added.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::map<std::string, std::int32_t> added_ids;
  std::vector<AddedToken> unique;
  for (const auto& token : added) {
    const std::string key = fmt::format("added_tokens (id {})", token.id);
    if (!unique.empty() && unique.back().id == token.id) {
      if (unique.back().content != token.content)
        file.fail(key, fmt::format("is both '{}' and '{}'",
                                   unique.back().content, token.content));
      continue;
    }
    if (const auto it = added_ids.find(token.content); it != added_ids.end())
      file.fail(key,
                fmt::format("'{}' is also id {}", token.content, it->second));
    if (spec.has_token[token.id] && spec.tokens[token.id] != token.content)
      file.fail(key, fmt::format("is '{}' but model.vocab has '{}' there",
                                 token.content, spec.tokens[token.id]));
    if (const auto it = spec.vocab.find(token.content);
        it != spec.vocab.end() && it->second != token.id)
      file.fail(key, fmt::format("'{}' is id {} in model.vocab", token.content,
                                 it->second));
    spec.tokens[token.id] = token.content;
    spec.has_token[token.id] = true;
    added_ids.emplace(token.content, token.id);
    unique.push_back(token);
  }
  spec.added = std::move(unique);
  spec.token_count = static_cast<std::size_t>(
      std::count(spec.has_token.begin(), spec.has_token.end(), true));
}

void read_merges(const File& file, TokenizerSpec& spec) {
  const json& model = file.root().at("model");
  const json& merges = file.require_array(model, "model", "merges");
  spec.merges.reserve(merges.size());
  const auto lookup = [&](const std::string& token, const std::string& key) {
    const auto it = spec.vocab.find(token);
    if (it == spec.vocab.end())
      file.fail(key, fmt::format("merges '{}', which is not in model.vocab: "
                                 "the file is inconsistent",
                                 token));
    return it->second;
  };
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string key = fmt::format("model.merges[{}]", i);
    const json& merge = merges[i];
    std::string left, right;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const std::size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 ||
          space + 1 >= text.size() ||
          text.find(' ', space + 1) != std::string::npos)
        file.fail(key, fmt::format("is {}: a merge is \"LEFT RIGHT\", two "
                                   "tokens and one space",
                                   shown(merge)));
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      file.fail(key, fmt::format("is {}: a merge is \"LEFT RIGHT\" or "
                                 "[\"LEFT\", \"RIGHT\"]",
                                 shown(merge)));
    }
    const std::int32_t left_id = lookup(left, key);
    const std::int32_t right_id = lookup(right, key);
    const std::int32_t merged = lookup(left + right, key);
    spec.merges.push_back({left_id, right_id, merged});
  }
}

void read_byte_ids(const File& file, TokenizerSpec& spec) {
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
  for (unsigned b = 0; b < 256; ++b) {
    const auto it =
        spec.vocab.find(alphabet.text(static_cast<unsigned char>(b)));
    if (it == spec.vocab.end())
      file.fail("model.vocab",
                fmt::format("has no token for byte 0x{:02x} ('{}'): a "
                            "byte-level BPE vocabulary has all 256",
                            b, alphabet.text(static_cast<unsigned char>(b))));
    spec.byte_ids[b] = it->second;
  }
}

void read_normalizer(const File& file, const json& normalizer,
                     const std::string& key, TokenizerSpec& spec) {
  if (normalizer.is_null()) return;
  const std::string type = type_of(file, normalizer, key);
  if (type == "NFC") {
    spec.nfc = true;
  } else if (type == "Sequence") {
    const json& list = file.require_array(normalizer, key, "normalizers");
    for (std::size_t i = 0; i < list.size(); ++i)
      read_normalizer(file, list[i], fmt::format("{}.normalizers[{}]", key, i),
                      spec);
  } else {
    file.fail(key + ".type",
              fmt::format("is '{}': mold's tokenizer has the normalizers NFC "
                          "and Sequence only, so it cannot encode as this "
                          "tokenizer does",
                          type));
  }
}

/// Reads one pre-tokenizer step; `byte_level` is set at the ByteLevel step,
/// which must be the last.
void read_pre_tokenizer(const File& file, const json& step,
                        const std::string& key, TokenizerSpec& spec,
                        bool& byte_level) {
  if (byte_level)
    file.fail(key,
              "comes after the ByteLevel step: mold's tokenizer needs "
              "ByteLevel last");
  const std::string type = type_of(file, step, key);
  if (type == "Sequence") {
    const json& list = file.require_array(step, key, "pretokenizers");
    for (std::size_t i = 0; i < list.size(); ++i)
      read_pre_tokenizer(file, list[i],
                         fmt::format("{}.pretokenizers[{}]", key, i), spec,
                         byte_level);
  } else if (type == "Split") {
    const json& pattern = file.require_object(step, key, "pattern");
    SplitSpec split;
    if (const json* regex = file.find(pattern, "Regex")) {
      split.pattern = file.string(*regex, key + ".pattern.Regex");
    } else if (const json* literal = file.find(pattern, "String")) {
      split.pattern = file.string(*literal, key + ".pattern.String");
      split.literal = true;
    } else {
      file.fail(key + ".pattern", "has neither \"Regex\" nor \"String\"");
    }
    const std::string behavior = file.require_string(step, key, "behavior");
    if (behavior != "Isolated")
      file.fail(key + ".behavior",
                fmt::format("is '{}': mold's tokenizer splits 'Isolated' only",
                            behavior));
    if (file.flag(step, key, "invert", false))
      file.fail(key + ".invert", "is true: inverted splits are not supported");
    spec.splits.push_back(std::move(split));
  } else if (type == "ByteLevel") {
    if (file.flag(step, key, "add_prefix_space", true))
      file.fail(key + ".add_prefix_space",
                "is true (or absent, which means true): a prefix space is not "
                "supported");
    if (file.flag(step, key, "use_regex", true))
      spec.splits.push_back({kGpt2Pattern, false});
    byte_level = true;
  } else {
    file.fail(key + ".type",
              fmt::format("is '{}': mold's tokenizer has the pre-tokenizers "
                          "Sequence, Split and ByteLevel only",
                          type));
  }
}

/// Whether `component` is ByteLevel or a Sequence of ByteLevel only, under
/// `list_name` ("decoders", "processors").
bool byte_level_only(const File& file, const json& component,
                     const std::string& key, const char* list_name) {
  const std::string type = type_of(file, component, key);
  if (type == "ByteLevel") return true;
  if (type != "Sequence") return false;
  const json& list = file.require_array(component, key, list_name);
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!byte_level_only(file, list[i],
                         fmt::format("{}.{}[{}]", key, list_name, i),
                         list_name))
      return false;
  return !list.empty();
}

void read_pipeline(const File& file, TokenizerSpec& spec) {
  const json& root = file.root();
  const json* normalizer = file.find(root, "normalizer");
  if (normalizer != nullptr)
    read_normalizer(file, *normalizer, "normalizer", spec);

  const json* pre = file.find(root, "pre_tokenizer");
  bool byte_level = false;
  if (pre != nullptr && !pre->is_null())
    read_pre_tokenizer(file, *pre, "pre_tokenizer", spec, byte_level);
  if (!byte_level)
    file.fail("pre_tokenizer",
              "has no ByteLevel step: mold's tokenizer reads byte-level BPE "
              "(GPT-2, Qwen, Llama 3) only");

  const json* post = file.find(root, "post_processor");
  if (post != nullptr && !post->is_null() &&
      !byte_level_only(file, *post, "post_processor", "processors"))
    file.fail(
        "post_processor",
        fmt::format("is {}: mold's tokenizer adds no tokens around the "
                    "text, so only ByteLevel (which adds none) is "
                    "supported",
                    shown(post->contains("type") ? post->at("type") : json())));

  const json* decoder = file.find(root, "decoder");
  if (decoder == nullptr || decoder->is_null() ||
      !byte_level_only(file, *decoder, "decoder", "decoders"))
    file.fail("decoder",
              "is not ByteLevel: mold's tokenizer decodes "
              "byte-level BPE only");
}

/// A special token of tokenizer_config.json: a string, {"content": ...} or
/// null.
std::optional<std::int32_t> read_special(const File& config, const char* name,
                                         const TokenizerSpec& spec) {
  const json* value = config.find(config.root(), name);
  if (value == nullptr || value->is_null()) return std::nullopt;
  std::string content;
  if (value->is_object())
    content = config.require_string(*value, name, "content");
  else
    content = config.string(*value, name);
  for (const auto& token : spec.added)
    if (token.content == content) return token.id;
  if (const auto it = spec.vocab.find(content); it != spec.vocab.end())
    return it->second;
  config.fail(name, fmt::format("is '{}', which is no token of the "
                                "tokenizer: the files do not belong together",
                                content));
}

/// The keys of tokenizer_config.json that change the ids transformers makes
/// and that mold implements at their usual value only: refused otherwise.
void check_encoding_options(const File& config) {
  // true adds a token to every prompt (transformers v5 rebuilds the
  // post-processor from them) or encodes special tokens as text.
  for (const char* key : {"add_bos_token", "add_eos_token",
                          "split_special_tokens", "add_prefix_space"}) {
    const json* value = config.find(config.root(), key);
    if (value == nullptr || value->is_null()) continue;
    if (!value->is_boolean())
      config.fail(key, fmt::format("is {} ({}), not true or false",
                                   value->type_name(), shown(*value)));
    if (value->get<bool>())
      config.fail(key,
                  "is true; mold's tokenizer encodes as the published "
                  "Qwen tokenizers do, with it false (set it to false or "
                  "remove it)");
  }
}

std::optional<std::int64_t> read_max_length(const File& config) {
  const json* value = config.find(config.root(), "model_max_length");
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (value->is_number_unsigned()) {
    const auto u = value->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (value->is_number_integer()) {
    const auto i = value->get<std::int64_t>();
    if (i <= 0)
      config.fail("model_max_length",
                  fmt::format("is {}: give a positive number of tokens", i));
    return i;
  }
  if (value->is_number_float()) {
    const double d = value->get<double>();
    if (!(d > 0))
      config.fail("model_max_length",
                  fmt::format("is {}: give a positive number of tokens",
                              shown(*value)));
    // transformers writes 1e30 (VERY_LARGE_INTEGER) for "no limit".
    if (d > 1e15 || d != static_cast<double>(static_cast<std::int64_t>(d)))
      return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  config.fail("model_max_length",
              fmt::format("is {}, not a number", value->type_name()));
}

}  // namespace

/// A Qwen2Tokenizer folder without tokenizer.json (Qwen-Image's
/// tokenizer/: vocab.json and merges.txt) as the tokenizer.json
/// transformers' Qwen2Converter makes of it: the same BPE, NFC, the Qwen2
/// split pattern and byte-level steps. The added tokens come from
/// tokenizer_config.json's added_tokens_decoder.
File slow_qwen2_tokenizer(const std::filesystem::path& dir) {
  const File vocab(dir / "vocab.json");
  const std::filesystem::path merges_path = dir / "merges.txt";
  std::error_code error;
  if (!std::filesystem::is_regular_file(merges_path, error))
    vocab.fail("",
               "has no merges.txt beside it: a tokenizer/ folder holds "
               "tokenizer.json, or vocab.json with merges.txt");
  const std::uintmax_t size = std::filesystem::file_size(merges_path, error);
  if (error || size > kMaxFileBytes)
    throw TokenizerFileError(merges_path, "",
                             error ? "cannot read its size: " + error.message()
                                   : fmt::format("is {} bytes, more than the "
                                                 "{} a tokenizer file may have",
                                                 size, kMaxFileBytes));
  std::ifstream in(merges_path, std::ios::binary);
  json merges = json::array();
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0))
      continue;
    merges.push_back(line);
  }
  json root = {
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab.root()},
        {"merges", std::move(merges)}}},
      {"added_tokens", json::array()},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern",
                        {{"Regex",
                          "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?"
                          "\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                          "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", false},
                       {"use_regex", false}}})}}},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", false},
        {"use_regex", false}}}};
  return File(dir / "vocab.json", std::move(root));
}

TokenizerSpec read_tokenizer_files(
    const std::filesystem::path& tokenizer_json,
    const std::filesystem::path& tokenizer_config_json) {
  TokenizerSpec spec;
  std::vector<std::pair<std::string, std::int32_t>> vocab;
  std::vector<AddedToken> added;
  {
    std::error_code error;
    const std::filesystem::path dir = tokenizer_json.parent_path();
    const bool slow = !std::filesystem::exists(tokenizer_json, error) &&
                      std::filesystem::exists(dir / "vocab.json", error);
    const File tokenizer =
        slow ? slow_qwen2_tokenizer(dir) : File(tokenizer_json);
    read_model(tokenizer, spec, vocab);
    added = read_added_tokens(tokenizer);
    const File config(tokenizer_config_json);
    read_added_tokens_decoder(config, tokenizer, added);
    build_token_table(tokenizer, vocab, added, spec);
    vocab.clear();
    vocab.shrink_to_fit();
    read_merges(tokenizer, spec);
    read_byte_ids(tokenizer, spec);
    read_pipeline(tokenizer, spec);
    spec.eos = read_special(config, "eos_token", spec);
    spec.pad = read_special(config, "pad_token", spec);
    spec.bos = read_special(config, "bos_token", spec);
    spec.model_max_length = read_max_length(config);
    check_encoding_options(config);
  }
  return spec;
}

}  // namespace mold
