#pragma once
/// The commands of molddiag, one entry point each, for main()'s command table.
/// Each takes the arguments after the command's name, prints its output on
/// stdout and returns the exit code (common/exit_codes.hpp); usage errors and
/// failures are thrown for run_command_table() to report.

#include <string>
#include <vector>

namespace mold::tools {
struct FailureContext;
}

namespace molddiag {

using mold::tools::FailureContext;

/// Program name as the user types it, for messages that name a command.
inline constexpr const char* kProgram = "molddiag";
/// The command that lists every plugin load error, named by the warning of the
/// commands that only use the plugins (tools::warn_load_errors).
inline constexpr const char* kPluginsCommand = "molddiag plugins";

int plugins_command(const std::vector<std::string>& args);
int estimate_command(const std::vector<std::string>& args);
int history_command(const std::vector<std::string>& args);
int classify_command(const std::vector<std::string>& args);
int vae_command(const std::vector<std::string>& args);
int tiling_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int tokenize_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);
int run_component_command(const std::vector<std::string>& args);
int leak_command(const std::vector<std::string>& args);
int parity_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int doctor_command(const std::vector<std::string>& args);

}  // namespace molddiag
