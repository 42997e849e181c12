#pragma once
/// Finds and loads plugins (Boost.DLL, RTLD_NOW | RTLD_LOCAL) into a Registry.

#include <filesystem>
#include <string>
#include <vector>

#include "mold/plugin/registry.hpp"

namespace mold {

class Config;
class PluginScanner;

/// Loads plugin libraries into a registry. A plugin that fails any ABI check is
/// skipped and its LoadError recorded in the registry; loading never throws for
/// a bad plugin. Before any code of a file runs, its ELF headers are read: a
/// foreign library (another CPU, no entry symbol) is refused unloaded. With a
/// scanner, a plugin is loaded only after a child process loaded it cleanly
/// (plugin_scanner.hpp). Libraries stay loaded for the life of the process.
class PluginLoader {
 public:
  /// `user_data_dir`: where plugins look for user overrides of their data files
  /// (calibration); may be empty. `scanner` (may be null: load directly) must
  /// outlive the loader.
  explicit PluginLoader(Registry& registry,
                        std::filesystem::path user_data_dir = {},
                        PluginScanner* scanner = nullptr);

  /// Loads one library. Returns false (and records why) when it was skipped.
  bool load_file(const std::filesystem::path& path);
  /// Loads every plugin library (*.so; *.dylib on macOS) in `dir`, in name
  /// order.
  void load_directory(const std::filesystem::path& dir);
  /// load_directory() for each, skipping repeats of the same directory.
  void load_directories(const std::vector<std::filesystem::path>& dirs);

 private:
  Registry& registry_;
  std::filesystem::path user_data_dir_;
  PluginScanner* scanner_;
};

/// The plugin search path, in order: `flag_dirs` (--plugin-dir), then
/// MOLD_PLUGIN_PATH (colon-separated), then the config's [plugins] dirs, then
/// installed_plugin_dir().
std::vector<std::filesystem::path> plugin_search_path(
    const std::vector<std::filesystem::path>& flag_dirs, const Config& config);

/// `<dir of libmold_core>/mold/plugins`: where `cmake --install` (and the build
/// tree) put the bundled plugins.
std::filesystem::path installed_plugin_dir();

/// The file extension of plugin libraries on this platform (".so", ".dylib").
std::string plugin_library_extension();

}  // namespace mold
