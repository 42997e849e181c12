// molddiag: diagnostics of mold's plugins, estimates and memory. A command
// table: each command is in commands/. This executable links no libtorch: it
// runs the commands that compute no tensors and hands the others to
// molddiag-torch (twin_main.cpp; common/tensor_twin.hpp).

#include <fmt/format.h>

#include <map>
#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <vector>

#include "commands/command_list.hpp"
#include "commands/commands.hpp"
#include "common/command_table.hpp"
#include "common/exit_codes.hpp"
#include "common/tensor_twin.hpp"

int main(int argc, char** argv) {
  using Run = std::function<int(const std::vector<std::string>&)>;
  const std::map<std::string, Run> own = {
      {"plugins", molddiag::plugins_command},
      {"estimate", molddiag::estimate_command},
      {"classify", molddiag::classify_command},
      {"report", molddiag::report_command},
      {"tokenize", molddiag::tokenize_command},
      // Their local and remote drivers hand the command to the twin
      // (commands/twin_drivers.cpp); the black-box driver runs here.
      {"leak", molddiag::leak_command},
      {"parity", molddiag::parity_command},
  };
  mold::tools::remember_command_line(molddiag::kProgram, argv);
  std::vector<mold::tools::Command> commands;
  for (const auto& entry : molddiag::command_list()) {
    const auto found = own.find(entry.name);
    Run run = [](const std::vector<std::string>&) -> int {
      mold::tools::hand_to_tensor_twin();
    };
    if (!entry.tensors && found != own.end()) run = found->second;
    commands.push_back({entry.name, entry.summary, std::move(run)});
  }
  return mold::tools::run_command_table(
      molddiag::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", molddiag::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
