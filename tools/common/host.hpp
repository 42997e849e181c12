#pragma once
/// The host a command runs in: the configuration, the plugin search path and
/// the registry the plugins of that path filled. Every command of a tool opens
/// one from its HostOptions, so they all find the same plugins and apply the
/// same limits. Torch-free.

#include <filesystem>
#include <memory>
#include <mold/config/config.hpp>
#include <mold/device/backend.hpp>
#include <mold/history/measured_history.hpp>
#include <mold/plugin/registry.hpp>
#include <string_view>
#include <vector>

#include "common/options.hpp"

namespace mold::tools {

/// The configuration and registry a command works with.
struct Host {
  mold::Config config;
  /// The directories the plugins were loaded from, in search order.
  std::vector<std::filesystem::path> search_path;
  /// Never null after open_host(). Plugins are never unloaded, so what they
  /// registered may outlive it.
  std::unique_ptr<mold::Registry> registry;
};

/// Loads the configuration, applies the cpu memory limit (the flag, else the
/// config's) and loads the plugins of the search path. Plugins that fail to
/// load are recorded in the registry's load_errors(), not thrown. Throws
/// mold::Error (configuration) or UsageError (bad --cpu-memory-limit).
Host open_host(const HostOptions& options);

/// The measured history of `backend`'s device (mold/estimate/
/// measured_history.hpp), or null when `[estimates] learn = false` or no
/// state directory is known. A history that cannot be read is warned
/// about on stderr once, naming the file, and learns from this process's
/// runs only.
std::shared_ptr<mold::MeasuredHistory> open_history(
    const Host& host, const mold::Backend& backend);
/// The same for a backend and device by name (molddiag estimate, history).
std::shared_ptr<mold::MeasuredHistory> open_history(const Host& host,
                                                    const std::string& backend,
                                                    const std::string& device);

/// When plugins failed to load, one line on stderr naming the first and
/// pointing at `plugins_command` (e.g. "molddiag plugins") for all of them;
/// nothing otherwise. For commands that use the plugins but do not list them.
void warn_load_errors(const mold::Registry& registry,
                      std::string_view plugins_command);

}  // namespace mold::tools
