// molddiag plugins: what is loaded, what it registered, what failed and why.

#include <fmt/format.h>

#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <nlohmann/json.hpp>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

namespace {

nlohmann::json to_json(const DiagContext& context) {
  nlohmann::json out;
  out["core"] = {{"version", MOLD_VERSION},
                 {"build_id", mold::core_build_id()}};
  out["search_path"] = nlohmann::json::array();
  for (const auto& dir : context.search_path)
    out["search_path"].push_back(dir.string());
  out["plugins"] = nlohmann::json::array();
  for (const auto& p : context.registry->plugins())
    out["plugins"].push_back({{"name", p.name},
                              {"version", p.version},
                              {"path", p.path.string()},
                              {"builtin", p.path.empty()},
                              {"build_id", p.build_id},
                              {"registered", p.registered}});
  out["errors"] = nlohmann::json::array();
  for (const auto& e : context.registry->load_errors())
    out["errors"].push_back({{"path", e.path.string()},
                             {"kind", std::string(mold::to_string(e.kind))},
                             {"message", e.message}});
  return out;
}

void print_text(const DiagContext& context) {
  std::cout << "search path:\n";
  for (const auto& dir : context.search_path)
    std::cout << "  " << dir.string() << "\n";
  const auto& plugins = context.registry->plugins();
  std::cout << fmt::format("\nplugins ({}):\n", plugins.size());
  for (const auto& p : plugins) {
    std::cout << fmt::format("  {} {}  {}\n", p.name, p.version,
                             p.path.empty() ? "(built in)" : p.path.string());
    for (const auto& item : p.registered) std::cout << "      " << item << "\n";
  }
  const auto& errors = context.registry->load_errors();
  if (errors.empty()) {
    std::cout << "\nno load errors\n";
    return;
  }
  std::cout << fmt::format("\nload errors ({}):\n", errors.size());
  for (const auto& e : errors)
    std::cout << fmt::format("  [{}] {}\n      {}\n", mold::to_string(e.kind),
                             e.path.string(), e.message);
}

}  // namespace

int plugins_command(const std::vector<std::string>& args) {
  CommonOptions common;
  bool json = false, strict = false;
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
      "json", po::bool_switch(&json),
      "print JSON (fields in docs/molddiag.md)")(
      "strict", po::bool_switch(&strict),
      "exit 3 when any plugin failed to load");
  add_common_options(options, common);
  const auto vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return kOk;
  }
  const DiagContext context = make_context(common);
  if (json)
    std::cout << to_json(context).dump(2) << "\n";
  else
    print_text(context);
  return strict && !context.registry->load_errors().empty() ? kPluginErrors
                                                            : kOk;
}

}  // namespace molddiag
