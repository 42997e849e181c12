#include "mold/base/error.hpp"

#include <fmt/format.h>

namespace mold {

namespace {
std::string config_message(const std::filesystem::path& file, std::size_t line,
                           const std::string& key, const std::string& problem) {
  std::string where = file.string();
  if (line > 0) where += fmt::format(":{}", line);
  if (!key.empty()) return fmt::format("{}: key '{}': {}", where, key, problem);
  return fmt::format("{}: {}", where, problem);
}
}  // namespace

ConfigError::ConfigError(std::filesystem::path file, std::size_t line,
                         std::string key, const std::string& problem)
    : Error(config_message(file, line, key, problem)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)) {}

}  // namespace mold
