// molddiag: diagnostics of mold's plugins, estimates and memory. A command
// table: each command is in commands/. This executable links no libtorch: it
// runs the commands that compute no tensors; of the others it reads and checks
// the options (printing their help and usage errors itself) and hands a good
// command line to molddiag-torch (twin_main.cpp; common/tensor_twin.hpp).

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <mold/base/build_config.hpp>
#include <mold/plugin/plugin.hpp>
#include <string>
#include <vector>

#include "commands/calibrate_options.hpp"
#include "commands/command_list.hpp"
#include "commands/commands.hpp"
#include "commands/doctor_options.hpp"
#include "commands/inspect_options.hpp"
#include "commands/run_component_options.hpp"
#include "commands/tiling_options.hpp"
#include "commands/vae_options.hpp"
#include "common/command_table.hpp"
#include "common/exit_codes.hpp"
#include "common/tensor_twin.hpp"

namespace {

using Args = std::vector<std::string>;

/// A tensor command's options read here: its help printed, or (when they are
/// good) the command handed to the twin, which reads them again.
template <class Request>
int help_or_hand_to_twin(const mold::tools::Parsed<Request>& parsed) {
  if (!parsed.help) mold::tools::hand_to_tensor_twin();
  std::cout << *parsed.help;
  return mold::tools::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  using Run = std::function<int(const Args&)>;
  const std::map<std::string, Run> own = {
      {"plugins", molddiag::plugins_command},
      {"estimate", molddiag::estimate_command},
      {"history", molddiag::history_command},
      {"classify", molddiag::classify_command},
      {"report", molddiag::report_command},
      {"tokenize", molddiag::tokenize_command},
      // Their local and remote drivers hand the command to the twin
      // (commands/twin_drivers.cpp); the black-box driver runs here.
      {"leak", molddiag::leak_command},
      {"parity", molddiag::parity_command},
      // The tensor commands: options here, the work in the twin.
      {"vae",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_vae_options(a));
       }},
      {"tiling",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_tiling_options(a));
       }},
      {"calibrate",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_calibrate_options(a));
       }},
      {"run-component",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_run_component_options(a));
       }},
      {"doctor",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_doctor_options(a));
       }},
      {"inspect",
       [](const Args& a) {
         return help_or_hand_to_twin(molddiag::parse_inspect_options(a));
       }},
  };
  mold::tools::remember_command_line(molddiag::kProgram, argv);
  std::vector<mold::tools::Command> commands;
  for (const auto& entry : molddiag::command_list()) {
    commands.push_back({entry.name, entry.summary, own.at(entry.name)});
  }
  return mold::tools::run_command_table(
      molddiag::kProgram, commands, argc, argv,
      fmt::format("{} {} ({})", molddiag::kProgram, MOLD_VERSION,
                  mold::core_build_id()));
}
