// molddiag plugins: what is loaded, what it registered, what failed and why.

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/text.hpp>
#include <mold/plugin/plugin.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct PluginsRequest {
  tools::HostOptions host;
  bool json = false;
  bool strict = false;
};

struct PluginsResult {
  std::vector<std::filesystem::path> search_path;
  std::vector<mold::PluginRecord> plugins;
  std::vector<mold::LoadError> errors;
};

tools::Parsed<PluginsRequest> parse_plugins_options(
    const std::vector<std::string>& args) {
  tools::Parsed<PluginsRequest> parsed;
  PluginsRequest& r = parsed.request;
  po::options_description options(
      "molddiag plugins [--json] [--strict]\n\n"
      "Loads the plugins of the search path (--plugin-dir, MOLD_PLUGIN_PATH, "
      "[plugins] dirs,\n"
      "the install's lib/mold/plugins) and lists each with its version, path "
      "and what it\n"
      "registered, then each plugin that failed to load with the reason.\n"
      "Exit: 0 listed; 3 with --strict when any plugin failed to load; 2 usage "
      "error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "json", po::bool_switch(&r.json),
      "print JSON (fields in docs/molddiag.md)")(
      "strict", po::bool_switch(&r.strict),
      "exit 3 when any plugin failed to load");
  tools::add_host_options(options, r.host);
  const auto vm = tools::parse_args(args, options);
  if (vm.count("help")) parsed.help = tools::help_text(options);
  return parsed;
}

PluginsResult run(const tools::Host& host) {
  return {host.search_path, host.registry->plugins(),
          host.registry->load_errors()};
}

nlohmann::json to_json(const PluginsResult& result) {
  nlohmann::json out;
  out["core"] = {{"version", MOLD_VERSION},
                 {"build_id", mold::core_build_id()}};
  out["search_path"] = nlohmann::json::array();
  for (const auto& dir : result.search_path)
    out["search_path"].push_back(dir.string());
  out["plugins"] = nlohmann::json::array();
  for (const auto& p : result.plugins)
    out["plugins"].push_back({{"name", p.name},
                              {"version", p.version},
                              {"path", p.path.string()},
                              {"builtin", p.path.empty()},
                              {"build_id", p.build_id},
                              {"registered", p.registered}});
  out["errors"] = nlohmann::json::array();
  for (const auto& e : result.errors)
    out["errors"].push_back({{"path", e.path.string()},
                             {"kind", std::string(mold::to_string(e.kind))},
                             {"message", e.message}});
  return out;
}

void print_text(const PluginsResult& result) {
  // Everything here may come from a plugin or a file name: shown escaped.
  using mold::escape_control;
  std::cout << "search path:\n";
  for (const auto& dir : result.search_path)
    std::cout << "  " << escape_control(dir.string()) << "\n";
  std::cout << fmt::format("\nplugins ({}):\n", result.plugins.size());
  for (const auto& p : result.plugins) {
    std::cout << fmt::format(
        "  {} {}  {}\n", escape_control(p.name), escape_control(p.version),
        p.path.empty() ? "(built in)" : escape_control(p.path.string()));
    for (const auto& item : p.registered)
      std::cout << "      " << escape_control(item) << "\n";
  }
  if (result.errors.empty()) {
    std::cout << "\nno load errors\n";
    return;
  }
  std::cout << fmt::format("\nload errors ({}):\n", result.errors.size());
  for (const auto& e : result.errors)
    std::cout << fmt::format("  [{}] {}\n      {}\n", mold::to_string(e.kind),
                             escape_control(e.path.string()),
                             escape_control(e.message));
}

void print(const PluginsRequest& request, const PluginsResult& result) {
  if (request.json)
    tools::print_json(std::cout, to_json(result));
  else
    print_text(result);
}

}  // namespace

int plugins_command(const std::vector<std::string>& args) {
  const auto parsed = parse_plugins_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const PluginsRequest& request = parsed.request;
  const PluginsResult result = run(tools::open_host(request.host));
  print(request, result);
  return request.strict && !result.errors.empty() ? tools::kPluginErrors
                                                  : tools::kOk;
}

}  // namespace molddiag
