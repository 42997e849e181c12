#pragma once
/// The user's configuration: one TOML file.
///
///     [plugins]
///     dirs = ["/opt/mold-plugins"]  # relative: from the file's dir
///     scan = true         # load new plugins in a child process first
///     scan_timeout = 10   # seconds a scan may take
///     [backends.cpu]
///     memory_limit = "8 GiB"
///     [cache]
///     policy = "lru"  # lru, smallest_first, greedy_dual_size
///     working_memory_floor = "3 GiB"
///     [calibration]
///     dir = "~/.config/mold/calibration"  # overrides of plugins' files
///     [estimates]
///     learn = true  # learn from and record into the device's measured
///                   # history (estimate/learned_estimate.hpp)
///     [models]
///     dirs = ["~/models"]  # where model directories are; relative: from
///                          # the file's dir (catalog/model_search.hpp)
///     [models."z-image-turbo"]  # a model's components from files
///     transformer = "~/ComfyUI/models/diffusion_models/z_image_turbo.gguf"
///     vae = "ae.safetensors"  # and text_encoder, mmproj
///
/// Unknown tables or keys are errors (a typo must not be silently ignored).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/cache/cache.hpp"

namespace mold {

class Config {
 public:
  /// The file the values came from; empty when none was found (all defaults).
  std::filesystem::path source;
  std::vector<std::filesystem::path> plugin_dirs;
  /// Scan plugins not seen before in a child process before loading them
  /// (plugin/plugin_scanner.hpp); false loads them directly.
  bool plugin_scan = true;
  /// Seconds a scan may take before the plugin counts as hanging.
  double plugin_scan_timeout = 10;
  std::optional<Bytes> cpu_memory_limit;
  CacheOptions cache;
  /// Where users override plugin data files; defaults to
  /// `$XDG_CONFIG_HOME/mold/calibration` (or `~/.config/mold/calibration`).
  std::filesystem::path calibration_dir;
  /// `[estimates] learn`: estimates corrected by, and phases recorded into,
  /// the device's measured history under $XDG_STATE_HOME/mold/history.
  bool learn_estimates = true;
  /// `[models] dirs`: where to look for model directories, after
  /// `--model-dir` and `MOLD_MODELS_DIR` (model_search_dirs()).
  std::vector<std::filesystem::path> model_dirs;
  /// `[models."z-image-turbo"] transformer = "...", vae, text_encoder,
  /// mmproj`: a model's components from single files (relative: from the
  /// file's dir), as mold run's --transformer and the like; the flags win.
  std::map<std::string, std::map<std::string, std::filesystem::path>>
      model_files;

  /// Parses one file. Throws ConfigError naming the file, line and key.
  static Config load_file(const std::filesystem::path& path);
  /// The first of: `explicit_path` (--config, must exist), $MOLD_CONFIG (must
  /// exist),
  /// `$XDG_CONFIG_HOME/mold/config.toml` or `~/.config/mold/config.toml`
  /// (optional).
  static Config load(const std::optional<std::filesystem::path>& explicit_path);
  /// The file load() would read when no path is given, whether or not it
  /// exists.
  static std::filesystem::path default_path();
};

/// `$XDG_CONFIG_HOME/mold` or `$HOME/.config/mold`; empty when neither is set.
std::filesystem::path user_config_dir();

}  // namespace mold
