#include "common/host.hpp"

#include <fmt/format.h>

#include <iostream>
#include <mold/base/bytes.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/plugin_scanner.hpp>
#include <optional>

namespace mold::tools {

Host open_host(const HostOptions& options) {
  Host host;
  std::optional<std::filesystem::path> config_path;
  if (!options.config_path.empty()) config_path = options.config_path;
  host.config = mold::Config::load(config_path);

  std::optional<mold::Bytes> limit = host.config.cpu_memory_limit;
  if (!options.cpu_memory_limit.empty()) {
    limit = mold::try_parse_bytes(options.cpu_memory_limit);
    if (!limit)
      throw UsageError(
          fmt::format("--cpu-memory-limit '{}' is not a byte count: write e.g. "
                      "\"8 GiB\" or \"512 MiB\"",
                      options.cpu_memory_limit));
    if (*limit < mold::kMinCpuMemoryLimit)
      throw UsageError(fmt::format(
          "--cpu-memory-limit '{}' is {}, below the minimum of {}: write a "
          "unit, e.g. \"8 GiB\"",
          options.cpu_memory_limit, mold::format_bytes(*limit),
          mold::format_bytes(mold::kMinCpuMemoryLimit)));
  }
  mold::CpuBackend::instance()->set_memory_limit(limit);

  std::vector<std::filesystem::path> flag_dirs(options.plugin_dirs.begin(),
                                               options.plugin_dirs.end());
  host.search_path = mold::plugin_search_path(flag_dirs, host.config);
  host.registry = std::make_unique<mold::Registry>();
  std::optional<mold::PluginScanner> scanner;
  if (host.config.plugin_scan && !options.no_scan)
    scanner.emplace(mold::PluginScanOptions{
        std::chrono::duration<double>(host.config.plugin_scan_timeout),
        mold::PluginScanner::default_cache_file(),
        host.config.calibration_dir});
  mold::PluginLoader loader(*host.registry, host.config.calibration_dir,
                            scanner ? &*scanner : nullptr);
  loader.load_directories(host.search_path);
  return host;  // the scanner saves its cache as it goes out of scope
}

std::shared_ptr<mold::MeasuredHistory> open_history(
    const Host& host, const mold::Backend& backend) {
  if (!host.config.learn_estimates) return nullptr;
  return open_history(host, backend.name(), backend.device_name());
}

std::shared_ptr<mold::MeasuredHistory> open_history(const Host& host,
                                                    const std::string& backend,
                                                    const std::string& device) {
  if (!host.config.learn_estimates) return nullptr;
  const auto directory = mold::MeasuredHistory::default_directory();
  if (directory.empty()) return nullptr;
  auto history = std::make_shared<mold::MeasuredHistory>(
      mold::MeasuredHistory::file_for(directory, backend, device), backend,
      device);
  if (const auto problem = history->problem(); !problem.empty())
    std::cerr << fmt::format(
        "warning: the memory history is not read: {} (estimates learn from "
        "this run only; [estimates] learn = false turns learning off)\n",
        problem);
  return history;
}

void warn_load_errors(const mold::Registry& registry,
                      std::string_view plugins_command) {
  const auto& errors = registry.load_errors();
  if (errors.empty()) return;
  std::cerr << fmt::format(
      "warning: {} plugin load error(s); first: {}. Run '{}' for all.\n",
      errors.size(), errors.front().message, plugins_command);
}

}  // namespace mold::tools
