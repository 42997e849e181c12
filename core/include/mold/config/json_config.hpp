#pragma once
/// Read-only access to a JSON object from a file such as a diffusers
/// `config.json`, with errors that name the file, the key, the value found and
/// the value expected. Keeps the JSON library out of every header.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mold {

/// One JSON object. Copies are cheap (they share the parsed document). Every
/// accessor throws ConfigError (file, key, problem) when the key is absent (the
/// forms without a default), has the wrong type, or holds a number out of the
/// range asked for.
class JsonConfig {
 public:
  /// Reads and parses `file`; it must hold a JSON object. Files larger than
  /// 64 MiB are refused (a config is small; this is not a config).
  static JsonConfig read(const std::filesystem::path& file);
  /// Parses `text`; `origin` names it in errors (a path or "<request>").
  static JsonConfig parse(std::string_view text, std::filesystem::path origin);

  const std::filesystem::path& origin() const;
  /// The dotted path of this object inside its file ("" at the top).
  const std::string& path() const;
  bool has(std::string_view key) const;
  /// Present and not null.
  bool has_value(std::string_view key) const;
  std::vector<std::string> keys() const;

  /// Integers: JSON integers only (3, not 3.0 or "3"), within [min, max].
  std::int64_t integer(std::string_view key, std::int64_t min = INT64_MIN,
                       std::int64_t max = INT64_MAX) const;
  std::int64_t integer_or(std::string_view key, std::int64_t fallback,
                          std::int64_t min = INT64_MIN,
                          std::int64_t max = INT64_MAX) const;
  /// Numbers: integers or floats, finite.
  double number(std::string_view key) const;
  double number_or(std::string_view key, double fallback) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  std::vector<std::int64_t> integers(std::string_view key,
                                     std::int64_t min = INT64_MIN,
                                     std::int64_t max = INT64_MAX) const;
  std::vector<double> numbers(std::string_view key) const;
  std::vector<std::string> strings(std::string_view key) const;
  /// A nested object.
  JsonConfig object(std::string_view key) const;
  /// The value as compact JSON text (for metadata and comparisons).
  std::string dump(std::string_view key) const;
  std::string dump() const;
  /// The value as compact JSON text cut to 60 characters, built no further
  /// than that: what a message shows of a value from the file.
  std::string shown(std::string_view key) const;

  /// Throws ConfigError naming this file and `key` (dotted below path())
  /// with `problem`: a value this file holds that the reader refuses.
  [[noreturn]] void fail(std::string_view key,
                         const std::string& problem) const;

 private:
  struct Document;
  JsonConfig(std::shared_ptr<const Document> document, const void* node,
             std::string path);
  std::shared_ptr<const Document> document_;
  const void* node_ = nullptr;  // the nlohmann::json object inside document_
  std::string path_;
};

}  // namespace mold
