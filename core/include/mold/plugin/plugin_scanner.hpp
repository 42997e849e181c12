#pragma once
/// The plugin scanner, as GStreamer's: before a process loads a plugin it has
/// not seen, a child process (fork) loads it under a time limit. A plugin that
/// crashes, aborts, calls exit(), hangs or writes to stdout/stderr while
/// loading (in its static constructors, its entry point or register_all) is
/// recorded as a LoadError of its own kind and never loaded by the parent, so
/// every other plugin and the command go on. Verdicts are cached by path,
/// size, mtime and the core's build id, so a warm start forks nothing.
///
/// What it cannot do: a plugin that misbehaves only later, when its
/// estimators, classifiers or backends are called, still runs in-process.

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mold/plugin/load_error.hpp"

namespace mold {

struct PluginScanOptions {
  /// How long one scan may take before the plugin counts as hanging.
  std::chrono::duration<double> timeout{10.0};
  /// The verdict cache; empty for none. default_cache_file() is the usual one.
  std::filesystem::path cache_file;
  /// Passed to the plugin's Registrar in the child, as the loader does.
  std::filesystem::path user_data_dir;
};

/// What one scan found: a clean load (the plugin's name and what it
/// registered, or the ordinary LoadError the loader gave in the child), or a
/// failure of the scan's own kinds (crashed, exited, timed_out, wrote_output).
struct PluginScanVerdict {
  bool safe = false;  ///< loading it in-process ran to the end, silently
  std::optional<LoadError> error;  ///< why it is not safe (safe == false)
  std::string name;                ///< from a clean load
  std::vector<std::string> registered;
  bool from_cache = false;
};

class PluginScanner {
 public:
  explicit PluginScanner(PluginScanOptions options);
  /// Writes the cache when a scan changed it (never throws: a cache that
  /// cannot be written only costs a rescan).
  ~PluginScanner();
  PluginScanner(const PluginScanner&) = delete;
  PluginScanner& operator=(const PluginScanner&) = delete;

  /// The cached verdict for `library` when its path, size, mtime and the
  /// core's build id match; else a scan in a child process, cached.
  PluginScanVerdict scan(const std::filesystem::path& library);

  /// Writes the cache now if it changed; returns false when it could not.
  bool save();

  /// `$XDG_CACHE_HOME/mold/plugins.json`, else
  /// `$HOME/.cache/mold/plugins.json`; empty when neither variable is set.
  static std::filesystem::path default_cache_file();

 private:
  struct Entry {
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    PluginScanVerdict verdict;
  };
  void load_cache();

  PluginScanOptions options_;
  std::map<std::string, Entry> entries_;
  bool dirty_ = false;
};

}  // namespace mold
