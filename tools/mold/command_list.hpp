#pragma once
// mold's commands as its usage lists them: the table of `mold` (main.cpp) and
// of `mold-torch` (twin_main.cpp) alike, each linking its own run_local() and
// serve_command() (twin_runs.cpp in mold).

#include <vector>

#include "commands.hpp"
#include "common/command_table.hpp"

namespace mold_cli {

inline std::vector<mold::tools::Command> command_list() {
  return {
      {"run",
       "make images from a prompt: text encoder, denoiser, VAE, each phase "
       "through the model cache",
       run_command},
      {"serve",
       "serve the HTTP API: generate, stream progress, status, memory, "
       "metrics; one device job at a time",
       serve_command},
  };
}

}  // namespace mold_cli
