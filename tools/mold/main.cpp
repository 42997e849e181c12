// mold: generate images with diffusion models, memory measured. A command
// table (command_list.hpp). This executable links no libtorch: it answers help
// and usage errors and runs on a server (MOLD_HOST) itself, and hands a run
// here and `mold serve` to mold-torch (twin_main.cpp; common/tensor_twin.hpp).

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <vector>

#include "command_list.hpp"
#include "common/command_table.hpp"
#include "common/tensor_twin.hpp"

int main(int argc, char** argv) {
  mold::tools::remember_command_line(mold_cli::kProgram, argv);
  return mold::tools::run_command_table(
      mold_cli::kProgram, mold_cli::command_list(), argc, argv,
      fmt::format("{} {} ({})", mold_cli::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
