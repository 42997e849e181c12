#pragma once
/// A tool as a table of commands: `tool <command> [options]`. The table gives
/// the usage text and the dispatch; run_command_table() turns what a command
/// throws into a message and an exit code the same way for every tool, so a
/// command only parses, runs and prints. Torch-free.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mold::tools {

/// One command of a tool.
struct Command {
  /// What the user types after the tool's name, e.g. "plugins".
  std::string name;
  /// One line for the usage text.
  std::string summary;
  /// Runs the command on the arguments after its name; returns the exit code.
  /// May throw: see run_command_table().
  std::function<int(const std::vector<std::string>&)> run;
};

/// The tool's usage text: the synopsis, each command with its summary (names
/// padded to one column), how to get a command's help, and the options every
/// command takes (host.hpp).
std::string usage_text(std::string_view program,
                       const std::vector<Command>& commands);

/// main() of a tool. No arguments: the usage on stdout, exit kUsage; --help,
/// -h or help: the usage, exit kOk; --version: `version_line` and a newline,
/// exit kOk; an unknown command: a message and the usage on stderr, exit
/// kUsage. Otherwise runs the command and maps what it throws to a message on
/// stderr naming the command: UsageError (with the hint to run the command's
/// --help) and mold::InvalidArgument exit kUsage, any other std::exception
/// kFailure.
int run_command_table(std::string_view program,
                      const std::vector<Command>& commands, int argc,
                      const char* const* argv, std::string_view version_line);

}  // namespace mold::tools
