#include "common/tensor_twin.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <system_error>

#include "common/exit_codes.hpp"

#ifndef MOLD_TWIN_RELATIVE_DIR
#  error \
      "MOLD_TWIN_RELATIVE_DIR (the twins' directory from the tools') is unset"
#endif

namespace mold::tools {

namespace {

std::string remembered_program;
char** remembered_argv = nullptr;

}  // namespace

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
  // OpenMP's threads wait for work by sleeping, not spinning, unless the
  // user says otherwise: spinning collapses when other processes want the
  // CPUs (a published-width Z-Image layer with 2 threads and one of 2 CPUs
  // taken: 2.80x its time alone spinning, 1.62x sleeping; no loss alone:
  // bench/thread_scaling_bench, docs/performance.md). libgomp reads this
  // when it loads, so it is set here, before the twin starts.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  ::execv(twin.c_str(), argv);
  const int error = errno;
  std::cerr << fmt::format(
      "{}: this command computes with libtorch, in {}, which could not be run "
      "({}): reinstall mold (the two come from one build)\n",
      program, twin.string(), std::strerror(error));
}

void remember_command_line(std::string_view program, char** argv) {
  remembered_program = std::string(program);
  remembered_argv = argv;
}

void hand_to_tensor_twin() {
  if (remembered_argv)
    exec_tensor_twin(remembered_program, remembered_argv);
  else
    std::cerr << "internal error: no command line to hand to the twin\n";
  std::cerr.flush();
  std::exit(kFailure);
}

}  // namespace mold::tools
