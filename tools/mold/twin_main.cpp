// mold-torch: mold with libtorch, the same command table. mold (main.cpp)
// hands it a run here and `mold serve`; run directly it is the whole of mold.

#include <fmt/format.h>

#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <vector>

#include "command_list.hpp"
#include "common/command_table.hpp"

int main(int argc, char** argv) {
  return mold::tools::run_command_table(
      mold_cli::kProgram, mold_cli::command_list(), argc, argv,
      fmt::format("{} {} ({})", mold_cli::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
