#pragma once
// The commands of mold, one function each (main.cpp's table).

#include <string>
#include <vector>

namespace mold_cli {

inline constexpr const char* kProgram = "mold";

int run_command(const std::vector<std::string>& args);
int serve_command(const std::vector<std::string>& args);

}  // namespace mold_cli
