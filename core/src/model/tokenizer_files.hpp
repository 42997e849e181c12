#pragma once
// Reading tokenizer.json and tokenizer_config.json into what BpeTokenizer is
// built from, checking everything on the way: every error names the file, the
// key and what to do, and no file, however malformed, makes the reader crash
// or allocate without bound. Private to mold_torch.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/bpe_model.hpp"
#include "mold/model/tokenizer.hpp"

namespace mold {

/// The largest token id accepted (ids index a table).
inline constexpr std::int64_t kMaxTokenId = (1 << 24) - 1;

/// A Split step of the pre-tokenizer.
struct SplitSpec {
  std::string pattern;
  bool literal = false;  ///< {"String": ...} rather than {"Regex": ...}
};

struct TokenizerSpec {
  /// model.vocab: byte-level text -> id.
  std::unordered_map<std::string, std::int32_t> vocab;
  /// Every id's token (vocabulary and added), "" for ids with none.
  std::vector<std::string> tokens;
  std::vector<bool> has_token;
  std::size_t token_count = 0;
  std::vector<BpeModel::Merge> merges;
  std::array<std::int32_t, 256> byte_ids{};
  bool ignore_merges = false;
  /// By id; the union of both files.
  std::vector<AddedToken> added;
  bool nfc = false;
  std::vector<SplitSpec> splits;
  std::optional<std::int32_t> eos, pad, bos;
  std::optional<std::int64_t> model_max_length;
};

/// Reads both files. Throws TokenizerFileError.
TokenizerSpec read_tokenizer_files(
    const std::filesystem::path& tokenizer_json,
    const std::filesystem::path& tokenizer_config_json);

}  // namespace mold
