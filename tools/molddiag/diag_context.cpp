#include "diag_context.hpp"

#include <fmt/format.h>

#include <iostream>
#include <mold/base/bytes.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/plugin/plugin_loader.hpp>

namespace po = boost::program_options;

namespace molddiag {

void add_common_options(po::options_description& options,
                        CommonOptions& common) {
  options.add_options()(
      "plugin-dir", po::value(&common.plugin_dirs)->composing(),
      "directory of plugins to load before the others (repeatable)")(
      "config", po::value(&common.config_path),
      "configuration file (default: $MOLD_CONFIG, then "
      "$XDG_CONFIG_HOME/mold/config.toml)")(
      "cpu-memory-limit", po::value(&common.cpu_memory_limit),
      "cap on the cpu backend's tensor memory, e.g. \"8 GiB\" (overrides the "
      "config)");
}

DiagContext make_context(const CommonOptions& common) {
  DiagContext context;
  std::optional<std::filesystem::path> config_path;
  if (!common.config_path.empty()) config_path = common.config_path;
  context.config = mold::Config::load(config_path);

  std::optional<mold::Bytes> limit = context.config.cpu_memory_limit;
  if (!common.cpu_memory_limit.empty()) {
    limit = mold::try_parse_bytes(common.cpu_memory_limit);
    if (!limit)
      throw UsageError(
          fmt::format("--cpu-memory-limit '{}' is not a byte count: write e.g. "
                      "\"8 GiB\" or \"512 MiB\"",
                      common.cpu_memory_limit));
  }
  mold::CpuBackend::instance()->set_memory_limit(limit);

  std::vector<std::filesystem::path> flag_dirs(common.plugin_dirs.begin(),
                                               common.plugin_dirs.end());
  context.search_path = mold::plugin_search_path(flag_dirs, context.config);
  context.registry = std::make_unique<mold::Registry>();
  mold::PluginLoader loader(*context.registry, context.config.calibration_dir);
  loader.load_directories(context.search_path);
  return context;
}

po::variables_map parse(const std::vector<std::string>& args,
                        const po::options_description& options,
                        const po::positional_options_description* positional) {
  po::variables_map vm;
  try {
    po::command_line_parser parser(args);
    parser.options(options);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

void warn_load_errors(const mold::Registry& registry) {
  const auto& errors = registry.load_errors();
  if (errors.empty()) return;
  std::cerr << fmt::format(
      "warning: {} plugin load error(s); first: {}. Run 'molddiag plugins' "
      "for all.\n",
      errors.size(), errors.front().message);
}

}  // namespace molddiag
