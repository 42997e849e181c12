#include "common/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "mold/base/text.hpp"

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

namespace {

/// The ranges of the options added with add_ranged_int, for the message when
/// program_options itself refuses a value (not a number, or too large for an
/// int). Keyed by the options description and the long name: one flag (--tile)
/// has other ranges in other commands' options.
using RangeKey = std::pair<const po::options_description*, std::string>;
std::map<RangeKey, std::pair<int, int>>& ranges() {
  static std::map<RangeKey, std::pair<int, int>> known;
  return known;
}

std::string out_of_range(const std::string& flag, const std::string& value,
                         int low, int high) {
  // A number program_options could not store (too large for an int) is out of
  // range; anything else ("wide", "8.5") is not a whole number at all.
  std::size_t digits = value.size() > 0 && (value[0] == '-' || value[0] == '+');
  const bool integer =
      digits < value.size() &&
      value.find_first_not_of("0123456789", digits) == std::string::npos;
  return fmt::format("--{} '{}' is {}: give a whole number from {} to {}", flag,
                     value, integer ? "out of range" : "not a whole number",
                     low, high);
}

}  // namespace

void add_ranged_int(po::options_description& options, const char* name,
                    int* target, int low, int high, const std::string& help,
                    std::optional<int> default_value, bool required) {
  ranges()[{&options, name}] = {low, high};
  auto* value = po::value(target);
  if (default_value) value->default_value(*default_value);
  if (required) value->required();
  const std::string flag = name;
  value->notifier([flag, low, high](int v) {
    if (v < low || v > high)
      throw UsageError(out_of_range(flag, std::to_string(v), low, high));
  });
  const std::string text = fmt::format("{} ({} to {})", help, low, high);
  options.add_options()(name, value, text.c_str());
}

void add_ranged_real(po::options_description& options, const char* name,
                     std::optional<double>* target, double low, double high,
                     const std::string& help) {
  const std::string flag = name;
  auto* value = po::value<std::string>();
  value->notifier([flag, target, low, high](const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const double parsed = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE ||
        !(parsed >= low && parsed <= high))
      throw UsageError(fmt::format("--{} '{}' is not a number from {} to {}",
                                   flag, text, low, high));
    *target = parsed;
  });
  const std::string text = fmt::format("{} ({} to {})", help, low, high);
  options.add_options()(name, value, text.c_str());
}

void refuse_tiny_with_model_dirs(bool tiny,
                                 const std::vector<std::string>& model_dirs) {
  if (!tiny || model_dirs.empty()) return;
  throw UsageError(fmt::format(
      "--tiny runs seeded weights at the tiny architecture and reads no model "
      "folder, but --model-dir {} was given too: drop --tiny to run the "
      "weights in that folder, or drop --model-dir",
      mold::escape_control(model_dirs.front())));
}

void refuse_empty(const po::variables_map& vm,
                  std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (!vm.count(name) || vm[name].defaulted()) continue;
    const auto* text = boost::any_cast<std::string>(&vm[name].value());
    if (text && text->empty())
      throw UsageError(fmt::format(
          "--{} is empty: give a value, or leave the option out for its "
          "default",
          name));
  }
}

void add_seed_option(po::options_description& options, const char* name,
                     std::uint64_t* target, const std::string& help) {
  const std::string flag = name;
  auto* value = po::value<std::string>()->default_value("0");
  value->notifier([flag, target](const std::string& text) {
    const bool digits =
        !text.empty() && text.size() <= 20 &&
        text.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    const unsigned long long parsed =
        digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE)
      throw UsageError(fmt::format(
          "--{} '{}' is not a seed: give a whole number from 0 to {}", flag,
          text, std::numeric_limits<std::uint64_t>::max()));
    *target = parsed;
  });
  options.add_options()(name, value, help.c_str());
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
  } catch (const po::invalid_option_value& e) {
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-') name.erase(0, 1);
    if (auto it = ranges().find({&options, name}); it != ranges().end()) {
      // program_options' text: "the argument ('VALUE') for option ..."
      const std::string what = e.what();
      const auto open = what.find("('"), close = what.find("')");
      const std::string value = open != std::string::npos &&
                                        close != std::string::npos &&
                                        close > open
                                    ? what.substr(open + 2, close - open - 2)
                                    : std::string("?");
      throw UsageError(
          out_of_range(name, value, it->second.first, it->second.second));
    }
    throw UsageError(e.what());
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
