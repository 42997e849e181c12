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
  };
  std::vector<mold::tools::Command> commands;
  for (const auto& entry : molddiag::command_list()) {
    const auto found = own.find(entry.name);
    Run run = [argv](const std::vector<std::string>&) {
      mold::tools::exec_tensor_twin(molddiag::kProgram, argv);
      return static_cast<int>(mold::tools::kFailure);
    };
    if (!entry.tensors && found != own.end()) run = found->second;
    commands.push_back({entry.name, entry.summary, std::move(run)});
  }
  return mold::tools::run_command_table(
      molddiag::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", molddiag::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
