// molddiag: diagnostics of mold's plugins, estimates and memory. A command
// table: each command is in commands/.

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <vector>

#include "commands/commands.hpp"
#include "common/command_table.hpp"

int main(int argc, char** argv) {
  const std::vector<mold::tools::Command> commands = {
      {"plugins",
       "list loaded plugins, what they registered, and plugins that failed to "
       "load",
       molddiag::plugins_command},
      {"estimate", "the working-memory estimate of one operation",
       molddiag::estimate_command},
      {"classify",
       "whether an error text is an out-of-memory error, where, and what to do",
       molddiag::classify_command},
      {"vae", "run one VAE encode or decode on tensors from a safetensors file",
       molddiag::vae_command},
      {"tiling",
       "decode one latent whole, bounded and tiled: peaks, times, differences",
       molddiag::tiling_command},
      {"calibrate",
       "measure an op's working memory on the cpu backend; write the constants",
       molddiag::calibrate_command},
      {"run-component",
       "run one component (text encoder, transformer, VAE) on tensors from a "
       "safetensors file",
       molddiag::run_component_command},
      {"tokenize", "the token ids of a text, with a family's tokenizer files",
       molddiag::tokenize_command},
      {"leak", "make N images and say whether memory grows, and what keeps it",
       molddiag::leak_command},
      {"parity", "make N images and check none needs more than the first",
       molddiag::parity_command},
      {"report", "analyse a saved JSON report again; write it as HTML",
       molddiag::report_command},
      {"doctor",
       "libtorch's threads, the BLAS it calls, and its matrix-product speed",
       molddiag::doctor_command},
  };
  return mold::tools::run_command_table(
      molddiag::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", molddiag::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
