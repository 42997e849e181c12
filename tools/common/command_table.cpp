#include "common/command_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/oom/oom_text.hpp>

#include "common/exit_codes.hpp"
#include "common/options.hpp"

namespace mold::tools {

std::string usage_text(std::string_view program,
                       const std::vector<Command>& commands) {
  std::size_t width = 0;
  for (const auto& c : commands) width = std::max(width, c.name.size());
  std::string text =
      fmt::format("usage: {} <command> [options]\n\ncommands:\n", program);
  for (const auto& c : commands)
    text += fmt::format("  {:<{}}  {}\n", c.name, width, c.summary);
  text += fmt::format(
      "\nRun '{} <command> --help' for a command's options.\n"
      "Options of every command: --plugin-dir DIR, --config FILE, "
      "--cpu-memory-limit BYTES, --no-scan.\n",
      program);
  return text;
}

int run_command_table(std::string_view program,
                      const std::vector<Command>& commands, int argc,
                      const char* const* argv, std::string_view version_line) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      args[0] == "help") {
    std::cout << usage_text(program, commands);
    return args.empty() ? kUsage : kOk;
  }
  if (args[0] == "--version") {
    std::cout << version_line << "\n";
    return kOk;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  const auto command =
      std::find_if(commands.begin(), commands.end(),
                   [&](const Command& c) { return c.name == name; });
  if (command == commands.end()) {
    std::cerr << fmt::format("{}: unknown command '{}'\n\n{}", program, name,
                             usage_text(program, commands));
    return kUsage;
  }
  try {
    return command->run(args);
  } catch (const UsageError& e) {
    std::cerr << fmt::format("{} {}: {}\nRun '{} {} --help' for its options.\n",
                             program, name, e.what(), program, name);
    return kUsage;
  } catch (const mold::InvalidArgument& e) {
    std::cerr << fmt::format("{} {}: {}\n", program, name, e.what());
    return kUsage;
  } catch (const mold::Error& e) {
    std::cerr << fmt::format("{} {}: {}\n", program, name, e.what());
    return kFailure;
  } catch (const std::exception& e) {
    // Not mold's: a library's error may carry a C++ backtrace (libtorch's
    // c10::Error does), which is no message for a person.
    std::cerr << fmt::format("{} {}: {}\n", program, name,
                             mold::strip_backtrace(e.what()));
    return kFailure;
  }
}

}  // namespace mold::tools
