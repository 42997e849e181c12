#pragma once
// Strict reading of TOML files into typed values, each failure a ConfigError
// naming the file, line and dotted key. Private to the core.

#include <toml++/toml.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "mold/base/error.hpp"

namespace mold::toml_reader {

/// Parses `path`; a missing file or a syntax error is a ConfigError.
toml::table parse(const std::filesystem::path& path);

/// Throws ConfigError for the first key of `table` not in `allowed`.
void require_known_keys(const std::filesystem::path& file,
                        const toml::table& table, const std::string& prefix,
                        std::initializer_list<std::string_view> allowed);
void require_known_keys(const std::filesystem::path& file,
                        const toml::table& table, const std::string& prefix,
                        const std::vector<std::string_view>& allowed);

std::size_t line_of(const toml::node& node);

/// Joins a key to its table's path: "backends" + "cpu" -> "backends.cpu".
std::string key_path(const std::string& prefix, std::string_view key);

}  // namespace mold::toml_reader
