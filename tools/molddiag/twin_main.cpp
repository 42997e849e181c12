// molddiag-torch: molddiag with libtorch, every command in one table. molddiag
// (main.cpp) hands it the commands that compute tensors; run directly it is
// the whole of molddiag.

#include <fmt/format.h>

#include <map>
#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <mold/tensor/compute_threads.hpp>
#include <string>
#include <vector>

#include "commands/command_list.hpp"
#include "commands/commands.hpp"
#include "common/command_table.hpp"

int main(int argc, char** argv) {
  // The commands that compute (leak, parity, calibrate, run-component) start
  // with the threads mold run would: OMP_NUM_THREADS, else the CPUs this
  // process may run on.
  mold::start_compute_threads(0);
  using Run = std::function<int(const std::vector<std::string>&)>;
  const std::map<std::string, Run> all = {
      {"plugins", molddiag::plugins_command},
      {"estimate", molddiag::estimate_command},
      {"history", molddiag::history_command},
      {"classify", molddiag::classify_command},
      {"vae", molddiag::vae_command},
      {"tiling", molddiag::tiling_command},
      {"calibrate", molddiag::calibrate_command},
      {"run-component", molddiag::run_component_command},
      {"tokenize", molddiag::tokenize_command},
      {"inspect", molddiag::inspect_command},
      {"leak", molddiag::leak_command},
      {"parity", molddiag::parity_command},
      {"report", molddiag::report_command},
      {"doctor", molddiag::doctor_command},
  };
  std::vector<mold::tools::Command> commands;
  for (const auto& entry : molddiag::command_list())
    commands.push_back({entry.name, entry.summary, all.at(entry.name)});
  return mold::tools::run_command_table(
      molddiag::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", molddiag::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
