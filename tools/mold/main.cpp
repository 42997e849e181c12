// mold: generate images with diffusion models, memory measured. A command
// table: each command is its own file.

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <vector>

#include "commands.hpp"
#include "common/command_table.hpp"

int main(int argc, char** argv) {
  const std::vector<mold::tools::Command> commands = {
      {"run",
       "make images from a prompt: text encoder, denoiser, VAE, each phase "
       "through the model cache",
       mold_cli::run_command},
      {"serve",
       "serve the HTTP API: generate, stream progress, status, memory, "
       "metrics; one device job at a time",
       mold_cli::serve_command},
  };
  return mold::tools::run_command_table(
      mold_cli::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", mold_cli::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
