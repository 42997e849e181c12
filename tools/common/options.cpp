#include "common/options.hpp"

#include <algorithm>
#include <sstream>

namespace po = boost::program_options;

namespace mold::tools {

void add_host_options(po::options_description& options, HostOptions& host) {
  options.add_options()(
      "plugin-dir", po::value(&host.plugin_dirs)->composing(),
      "directory of plugins to load before the others (repeatable)")(
      "config", po::value(&host.config_path),
      "configuration file (default: $MOLD_CONFIG, then "
      "$XDG_CONFIG_HOME/mold/config.toml)")(
      "cpu-memory-limit", po::value(&host.cpu_memory_limit),
      "cap on the cpu backend's tensor memory, e.g. \"8 GiB\" (overrides the "
      "config)")(
      "no-scan", po::bool_switch(&host.no_scan),
      "load plugins directly, without first loading new ones in a child "
      "process (as [plugins] scan = false)");
}

po::variables_map parse_args(
    const std::vector<std::string>& args,
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

bool wants_help(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
}

std::string help_text(const po::options_description& options) {
  std::ostringstream out;
  out << options << "\n";
  return out.str();
}

}  // namespace mold::tools
