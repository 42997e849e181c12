#pragma once
/// Command-line parsing shared by mold's tools: the options every command
/// takes (where the plugins and the configuration come from, the cpu memory
/// limit), the usage error, and program_options parsing that turns its errors
/// into that usage error. Torch-free.

#include <boost/program_options.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mold::tools {

/// A usage error: bad flags or flag values. run_command_table() prints it with
/// the command's help hint and exits with kUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The options every command accepts: they decide the Host (host.hpp) the
/// command works in.
struct HostOptions {
  /// --plugin-dir: directories searched before the others, in order.
  std::vector<std::string> plugin_dirs;
  /// --config: the configuration file; empty for $MOLD_CONFIG or the default.
  std::string config_path;
  /// --cpu-memory-limit, as written ("8 GiB"); empty for the config's.
  std::string cpu_memory_limit;
  /// --no-scan: load plugins without the scanner (plugin_scanner.hpp).
  bool no_scan = false;
};

/// Adds --plugin-dir, --config, --cpu-memory-limit and --no-scan, stored into
/// `host` (which must outlive the parsing), to `options`.
void add_host_options(boost::program_options::options_description& options,
                      HostOptions& host);

/// Adds the integer option `--name` storing into `target` (which must outlive
/// the parsing), accepting only `low`..`high`: a value outside, or one that is
/// no whole number or too large for the type, is a UsageError naming the flag,
/// the value and the range ("--width '3000000000' is out of range: give a
/// whole number from 1 to 65536"). `help` gets " (low to high)" appended.
void add_ranged_int(boost::program_options::options_description& options,
                    const char* name, int* target, int low, int high,
                    const std::string& help,
                    std::optional<int> default_value = std::nullopt,
                    bool required = false);

/// Adds `--name` for a number stored into `target` (which must outlive the
/// parsing) when given: a finite number from `low` to `high`, else a UsageError
/// naming the flag, the value and the range ("--guidance 'nan' is not a number
/// from 0 to 100"). `help` gets " (low to high)" appended.
void add_ranged_real(boost::program_options::options_description& options,
                     const char* name, std::optional<double>* target,
                     double low, double high, const std::string& help);

/// Refuses an option given with an empty value (`--dtype ''`) for the
/// options named in `names`: a UsageError saying to leave it out for its
/// default.
void refuse_empty(const boost::program_options::variables_map& vm,
                  std::initializer_list<const char*> names);

/// Refuses --tiny with --model-dir: the tiny architecture runs seeded weights
/// and would read no folder given (the folder would be ignored without a word).
/// A UsageError naming the folder and the two ways out.
void refuse_tiny_with_model_dirs(bool tiny,
                                 const std::vector<std::string>& model_dirs);

/// Adds `--name` for a seed stored into `target`: a whole number from 0 to
/// 2^64 - 1, read strictly ("-1" is refused, not wrapped to 2^64 - 1 as a plain
/// unsigned option would).
void add_seed_option(boost::program_options::options_description& options,
                     const char* name, std::uint64_t* target,
                     const std::string& help);

/// Parses `args` against `options` (with `positional` names, may be null) and
/// notifies the variables. Throws UsageError with program_options' message.
boost::program_options::variables_map parse_args(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description* positional =
        nullptr);

/// Whether `args` ask for help (--help or -h anywhere): for commands that must
/// answer it before parsing, when required options would fail the parse.
bool wants_help(const std::vector<std::string>& args);

/// A command's help text: `options` as program_options prints it, then an
/// empty line.
std::string help_text(
    const boost::program_options::options_description& options);

/// What a command's parse step gives: the help text when the arguments asked
/// for it (then `request` is left default), else the request to run.
template <class Request> struct Parsed {
  std::optional<std::string> help;
  Request request;
};

}  // namespace mold::tools
