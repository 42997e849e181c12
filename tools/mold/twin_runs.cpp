// mold's (torch-free) local run and server: both compute with libtorch, so
// `mold` hands the whole command, its options read and checked (a run's) or
// as given (serve), to mold-torch (common/tensor_twin.hpp), which has the
// real ones (run.cpp, serve.cpp). A run on a server goes from `mold` itself.

#include "commands.hpp"
#include "common/tensor_twin.hpp"
#include "run_options.hpp"

namespace mold_cli {

int run_local(const RunRequest& /*request*/,
              const std::vector<std::string>& /*images_png*/) {
  mold::tools::hand_to_tensor_twin();
}

int serve_command(const std::vector<std::string>& /*args*/) {
  mold::tools::hand_to_tensor_twin();
}

}  // namespace mold_cli
