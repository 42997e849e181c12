#include "mold/config/config.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "config/toml_reader.hpp"
#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"
#include "mold/device/cpu_backend.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

fs::path expand_home(const std::string& text) {
  if (text == "~" || text.rfind("~/", 0) == 0) {
    if (const char* home = std::getenv("HOME"))
      return fs::path(home) / text.substr(text.size() > 1 ? 2 : 1);
  }
  return text;
}

fs::path resolve_against(const fs::path& file, const std::string& text) {
  fs::path p = expand_home(text);
  return p.is_relative() ? file.parent_path() / p : p;
}

const toml::table* sub_table(const fs::path& file, const toml::table& parent,
                             const std::string& prefix, std::string_view key) {
  const toml::node* node = parent.get(key);
  if (!node) return nullptr;
  if (!node->is_table())
    throw ConfigError(
        file, toml_reader::line_of(*node), toml_reader::key_path(prefix, key),
        "must be a table, e.g. [" + toml_reader::key_path(prefix, key) + "]");
  return node->as_table();
}

}  // namespace

fs::path user_config_dir() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    return fs::path(xdg) / "mold";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".config" / "mold";
  return {};
}

fs::path Config::default_path() {
  const fs::path dir = user_config_dir();
  return dir.empty() ? fs::path() : dir / "config.toml";
}

Config Config::load_file(const fs::path& path) {
  const toml::table root = toml_reader::parse(path);
  toml_reader::require_known_keys(
      path, root, "",
      {"plugins", "backends", "cache", "calibration", "estimates", "models"});

  Config config;
  config.source = path;
  if (const auto dir = user_config_dir(); !dir.empty())
    config.calibration_dir = dir / "calibration";

  if (const auto* plugins = sub_table(path, root, "", "plugins")) {
    toml_reader::require_known_keys(path, *plugins, "plugins",
                                    {"dirs", "scan", "scan_timeout"});
    if (const toml::node* scan = plugins->get("scan")) {
      const auto value = scan->value<bool>();
      if (!value || !scan->is_boolean())
        throw ConfigError(path, toml_reader::line_of(*scan), "plugins.scan",
                          "must be true or false");
      config.plugin_scan = *value;
    }
    if (const toml::node* timeout = plugins->get("scan_timeout")) {
      const auto value = timeout->value<double>();
      if (!value || !(*value >= 0.1 && *value <= 600))
        throw ConfigError(path, toml_reader::line_of(*timeout),
                          "plugins.scan_timeout",
                          "must be a number of seconds from 0.1 to 600, e.g. "
                          "scan_timeout = 10");
      config.plugin_scan_timeout = *value;
    }
    if (const toml::node* dirs = plugins->get("dirs")) {
      const auto* array = dirs->as_array();
      if (!array)
        throw ConfigError(
            path, toml_reader::line_of(*dirs), "plugins.dirs",
            "must be an array of paths, e.g. dirs = [\"/opt/mold/plugins\"]");
      for (const auto& item : *array) {
        const auto value = item.value<std::string>();
        if (!value)
          throw ConfigError(path, toml_reader::line_of(item), "plugins.dirs",
                            "every entry must be a string path");
        config.plugin_dirs.push_back(resolve_against(path, *value));
      }
    }
  }
  if (const auto* backends = sub_table(path, root, "", "backends")) {
    toml_reader::require_known_keys(path, *backends, "backends", {"cpu"});
    if (const auto* cpu = sub_table(path, *backends, "backends", "cpu")) {
      toml_reader::require_known_keys(path, *cpu, "backends.cpu",
                                      {"memory_limit"});
      if (const toml::node* limit = cpu->get("memory_limit")) {
        const auto text = limit->value<std::string>();
        std::optional<Bytes> bytes;
        if (text) bytes = try_parse_bytes(*text);
        if (!bytes)
          throw ConfigError(
              path, toml_reader::line_of(*limit), "backends.cpu.memory_limit",
              "must be a quoted byte count such as \"8 GiB\" or \"512 MiB\"");
        if (*bytes < kMinCpuMemoryLimit)
          throw ConfigError(
              path, toml_reader::line_of(*limit), "backends.cpu.memory_limit",
              fmt::format("{} is below the minimum of {}: write a unit, e.g. "
                          "\"8 GiB\"",
                          format_bytes(*bytes),
                          format_bytes(kMinCpuMemoryLimit)));
        config.cpu_memory_limit = *bytes;
      }
    }
  }
  if (const auto* cache = sub_table(path, root, "", "cache")) {
    toml_reader::require_known_keys(path, *cache, "cache",
                                    {"policy", "working_memory_floor"});
    if (const toml::node* policy = cache->get("policy")) {
      const auto text = policy->value<std::string>();
      try {
        if (!text) throw ParseError("must be a string");
        config.cache.policy = parse_eviction_policy(*text);
      } catch (const ParseError& e) {
        throw ConfigError(
            path, toml_reader::line_of(*policy), "cache.policy",
            std::string(e.what()) + " (write e.g. policy = \"lru\")");
      }
    }
    if (const toml::node* floor = cache->get("working_memory_floor")) {
      const auto text = floor->value<std::string>();
      const auto bytes = text ? try_parse_bytes(*text) : std::nullopt;
      if (!bytes)
        throw ConfigError(path, toml_reader::line_of(*floor),
                          "cache.working_memory_floor",
                          "must be a quoted byte count such as \"3 GiB\"");
      config.cache.working_memory_floor = *bytes;
    }
  }
  if (const auto* calibration = sub_table(path, root, "", "calibration")) {
    toml_reader::require_known_keys(path, *calibration, "calibration", {"dir"});
    if (const toml::node* dir = calibration->get("dir")) {
      const auto text = dir->value<std::string>();
      if (!text)
        throw ConfigError(path, toml_reader::line_of(*dir), "calibration.dir",
                          "must be a string path");
      config.calibration_dir = resolve_against(path, *text);
    }
  }
  if (const auto* estimates = sub_table(path, root, "", "estimates")) {
    toml_reader::require_known_keys(path, *estimates, "estimates", {"learn"});
    if (const toml::node* learn = estimates->get("learn")) {
      if (!learn->is_boolean())
        throw ConfigError(path, toml_reader::line_of(*learn), "estimates.learn",
                          "must be true or false");
      config.learn_estimates = *learn->value<bool>();
    }
  }
  if (const auto* models = sub_table(path, root, "", "models")) {
    for (const auto& [key, node] : *models) {
      const std::string name(key.str());
      if (name == "dirs") continue;
      // [models."z-image-turbo"]: a model's components from files.
      const auto* files = node.as_table();
      if (!files)
        throw ConfigError(
            path, toml_reader::line_of(node), "models." + name,
            "unknown key; known here: dirs (or a model's table "
            "[models.\"MODEL\"] with transformer, vae, text_encoder, mmproj)");
      toml_reader::require_known_keys(
          path, *files, "models." + name,
          {"transformer", "vae", "text_encoder", "mmproj"});
      auto& component_files = config.model_files[name];
      for (const auto& [component, value] : *files) {
        const auto text = value.value<std::string>();
        if (!text || text->empty())
          throw ConfigError(
              path, toml_reader::line_of(value),
              "models." + name + "." + std::string(component.str()),
              "must be a non-empty string path");
        component_files[std::string(component.str())] =
            resolve_against(path, *text);
      }
    }
    if (const toml::node* dirs = models->get("dirs")) {
      const auto* array = dirs->as_array();
      if (!array)
        throw ConfigError(
            path, toml_reader::line_of(*dirs), "models.dirs",
            "must be an array of paths, e.g. dirs = [\"~/models\"]");
      for (const auto& item : *array) {
        const auto value = item.value<std::string>();
        if (!value || value->empty())
          throw ConfigError(path, toml_reader::line_of(item), "models.dirs",
                            "every entry must be a non-empty string path");
        config.model_dirs.push_back(resolve_against(path, *value));
      }
    }
  }
  return config;
}

Config Config::load(const std::optional<fs::path>& explicit_path) {
  auto must_exist = [](const fs::path& path, const char* named_by) {
    const std::string type = describe_file_type(path);
    if (type == "missing" || type == "a dangling symlink")
      throw ConfigError(
          path, 0, "",
          fmt::format("config file named by {} does not exist: fix the path "
                      "or drop {}",
                      named_by, named_by));
    if (type != "a regular file")
      throw ConfigError(path, 0, "",
                        fmt::format("config file named by {} is {}, not a "
                                    "TOML file: give the path of the file",
                                    named_by, type));
  };
  if (explicit_path) {
    must_exist(*explicit_path, "--config");
    return load_file(*explicit_path);
  }
  if (const char* env = std::getenv("MOLD_CONFIG"); env && *env) {
    must_exist(env, "MOLD_CONFIG");
    return load_file(env);
  }
  const fs::path fallback = default_path();
  std::error_code ec;
  if (!fallback.empty() && fs::is_regular_file(fallback, ec))
    return load_file(fallback);
  Config defaults;
  if (const auto dir = user_config_dir(); !dir.empty())
    defaults.calibration_dir = dir / "calibration";
  return defaults;
}

}  // namespace mold
