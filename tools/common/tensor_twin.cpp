#include "common/tensor_twin.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <system_error>

#ifndef MOLD_TWIN_RELATIVE_DIR
#  error \
      "MOLD_TWIN_RELATIVE_DIR (the twins' directory from the tools') is unset"
#endif

namespace mold::tools {

std::filesystem::path tensor_twin_path(std::string_view program) {
  std::error_code ec;
  std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) self = std::filesystem::path(".") / std::string(program);
  return (self.parent_path() / MOLD_TWIN_RELATIVE_DIR /
          (std::string(program) + "-torch"))
      .lexically_normal();
}

void exec_tensor_twin(std::string_view program, char** argv) {
  const std::filesystem::path twin = tensor_twin_path(program);
  std::cout.flush();
  ::execv(twin.c_str(), argv);
  const int error = errno;
  std::cerr << fmt::format(
      "{}: this command computes with libtorch, in {}, which could not be run "
      "({}): reinstall mold (the two come from one build)\n",
      program, twin.string(), std::strerror(error));
}

}  // namespace mold::tools
