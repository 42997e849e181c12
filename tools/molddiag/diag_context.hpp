#pragma once
// What every molddiag command shares: the common options, the configuration,
// the loaded plugins, and the exit codes.

#include <boost/program_options.hpp>
#include <filesystem>
#include <memory>
#include <mold/config/config.hpp>
#include <mold/plugin/registry.hpp>
#include <string>
#include <vector>

namespace mold {
class Vae;  // mold/vae.hpp: only the commands that run a VAE include libtorch
}

namespace molddiag {

/// Exit codes, documented in docs/molddiag.md.
enum ExitCode : int {
  kOk = 0,
  kFailure =
      1,       ///< the command could not do what was asked (message on stderr)
  kUsage = 2,  ///< bad flags or values
  kPluginErrors =
      3,  ///< `plugins --strict`: at least one plugin failed to load
};

/// A usage error: bad flags or flag values. main() prints it with the command's
/// help hint.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Options every command accepts.
struct CommonOptions {
  std::vector<std::string> plugin_dirs;
  std::string config_path;
  std::string cpu_memory_limit;
};

/// Adds --plugin-dir, --config and --cpu-memory-limit to `options`.
void add_common_options(boost::program_options::options_description& options,
                        CommonOptions& common);

/// The configuration and registry a command works with.
struct DiagContext {
  mold::Config config;
  std::vector<std::filesystem::path> search_path;
  std::unique_ptr<mold::Registry> registry;
};

/// Loads the configuration, applies the cpu memory limit and loads the plugins.
/// Throws mold::Error (config) or UsageError (bad --cpu-memory-limit).
DiagContext make_context(const CommonOptions& common);

/// Parses `args` against `options` (with `positional` names, may be empty).
/// Throws UsageError with program_options' message.
boost::program_options::variables_map parse(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description* positional =
        nullptr);

/// One line on stderr when plugins failed to load (commands other than
/// `plugins`).
void warn_load_errors(const mold::Registry& registry);

/// The family's VAE in `config` ("default", "tiny") with weights from `seed`.
/// Throws NotFound naming the family when it is unknown or has no VAE.
std::unique_ptr<mold::Vae> make_family_vae(const mold::Registry& registry,
                                           const std::string& family,
                                           const std::string& config,
                                           std::uint64_t seed);

int plugins_command(const std::vector<std::string>& args);
int estimate_command(const std::vector<std::string>& args);
int classify_command(const std::vector<std::string>& args);
int vae_command(const std::vector<std::string>& args);
int tiling_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);

}  // namespace molddiag
