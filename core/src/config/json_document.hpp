#pragma once
/// Reading a JSON document, once for every JSON reader in the core
/// (JsonConfig, the tokenizer's files): the file checked before it is read
/// (present, a regular file, within a size limit), the parser's error cut to
/// its position and reason, and the top level required to be an object.
/// Private to the core: it includes the JSON library, which no public header
/// does. Each reader passes `fail`, which throws its own error type with the
/// problem (a sentence that starts with a verb: "is not valid JSON (...)").

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mold::json_document {

/// Throws; never returns.
using Fail = std::function<void(const std::string& problem)>;

struct Rules {
  std::uintmax_t max_bytes = 0;
  /// What the file should be, for messages: "a JSON config".
  std::string kind;
  /// What to give instead when the file is absent: "give the tokenizer/
  /// folder of a diffusers checkpoint".
  std::string when_missing;
};

/// The object in `file`.
nlohmann::json read_object(const std::filesystem::path& file,
                           const Rules& rules, const Fail& fail);
/// The object in `text`.
nlohmann::json parse_object(std::string_view text, const Rules& rules,
                            const Fail& fail);

/// `value` as compact JSON text, cut to 60 characters, for a message.
std::string shown(const nlohmann::json& value);

}  // namespace mold::json_document
