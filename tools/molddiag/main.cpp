// molddiag: diagnostics of mold's plugins, estimates and memory.

#include <fmt/format.h>

#include <exception>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <vector>

#include "diag_context.hpp"

namespace {

constexpr const char* kUsage = R"(usage: molddiag <command> [options]

commands:
  plugins    list loaded plugins, what they registered, and plugins that failed to load
  estimate   the working-memory estimate of one operation
  classify   whether an error text is an out-of-memory error, where, and what to do
  vae        run one VAE encode or decode on tensors from a safetensors file
  tiling     decode one latent whole, bounded and tiled: peaks, times, differences
  calibrate  measure a VAE's working memory on the cpu backend; write the constants

Run 'molddiag <command> --help' for a command's options.
Options of every command: --plugin-dir DIR, --config FILE, --cpu-memory-limit BYTES.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? molddiag::kUsage : molddiag::kOk;
  }
  if (args[0] == "--version") {
    std::cout << "molddiag " << MOLD_VERSION << " (" << mold::core_build_id()
              << ")\n";
    return molddiag::kOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "plugins") return molddiag::plugins_command(args);
    if (command == "estimate") return molddiag::estimate_command(args);
    if (command == "classify") return molddiag::classify_command(args);
    if (command == "vae") return molddiag::vae_command(args);
    if (command == "tiling") return molddiag::tiling_command(args);
    if (command == "calibrate") return molddiag::calibrate_command(args);
    std::cerr << fmt::format("molddiag: unknown command '{}'\n\n{}", command,
                             kUsage);
    return molddiag::kUsage;
  } catch (const molddiag::UsageError& e) {
    std::cerr << fmt::format(
        "molddiag {}: {}\nRun 'molddiag {} --help' for its options.\n", command,
        e.what(), command);
    return molddiag::kUsage;
  } catch (const mold::InvalidArgument& e) {
    std::cerr << fmt::format("molddiag {}: {}\n", command, e.what());
    return molddiag::kUsage;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("molddiag {}: {}\n", command, e.what());
    return molddiag::kFailure;
  }
}
