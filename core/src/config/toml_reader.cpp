#include "config/toml_reader.hpp"

#include <fmt/format.h>

#include <fstream>

#include "mold/base/file_io.hpp"

namespace mold::toml_reader {

toml::table parse(const std::filesystem::path& path) {
  const std::string type = describe_file_type(path);
  if (type != "a regular file" && type != "missing")
    throw ConfigError(path, 0, "",
                      "is " + type + ", not a TOML file: give a file");
  std::ifstream in(path);
  if (!in)
    throw ConfigError(
        path, 0, "",
        "cannot be read: check that the file exists and is readable");
  try {
    return toml::parse(in, path.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(path, e.source().begin.line, "",
                      fmt::format("not valid TOML: {}", e.description()));
  }
}

std::size_t line_of(const toml::node& node) { return node.source().begin.line; }

std::string key_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void require_known_keys(const std::filesystem::path& file,
                        const toml::table& table, const std::string& prefix,
                        std::initializer_list<std::string_view> allowed) {
  require_known_keys(file, table, prefix,
                     std::vector<std::string_view>(allowed));
}

void require_known_keys(const std::filesystem::path& file,
                        const toml::table& table, const std::string& prefix,
                        const std::vector<std::string_view>& allowed) {
  for (const auto& [key, node] : table) {
    bool known = false;
    for (auto a : allowed) known = known || a == key.str();
    if (known) continue;
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw ConfigError(file, line_of(node), key_path(prefix, key.str()),
                      fmt::format("unknown key; known here: {}", list));
  }
}

}  // namespace mold::toml_reader
