#pragma once
// mold run's command line, read and checked without libtorch: `mold` answers
// help and usage errors and sends a run to a server itself (remote_run.hpp),
// and hands a run here to `mold-torch` (run_local). Torch-free.

#include <cstdint>
#include <filesystem>
#include <map>
#include <mold/plan/generate_settings.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "remote_run.hpp"

namespace mold_cli {

struct RunRequest {
  mold::tools::HostOptions host;
  std::string model_spec;  ///< "z-image-turbo" or "z-image-turbo:bf16"
  mold::GenerateSettings generate;
  std::string output = ".";
  std::string dtype;  ///< empty: float32 for --tiny, else bfloat16
  std::vector<std::string> model_dirs;
  std::string backend = "cpu";
  bool tiny = false;
  bool plan = false;
  bool json = false;
  bool save_tensors = false;
  bool local = false;  ///< run here even with MOLD_HOST set
  /// --threads: every compute pool's count; 0 for libtorch's default
  /// (OMP_NUM_THREADS, else the physical cores), which the BLAS then gets.
  int threads = 0;
  std::string server;  ///< --host: a server to run on
  bool backend_given = false;
  std::vector<std::string> image_files;  ///< --image, in order
  /// --transformer, --vae, --text-encoder, --mmproj: component -> file.
  std::map<std::string, std::filesystem::path> component_files;
};

/// Parses mold run's arguments; throws tools::UsageError naming the flag.
mold::tools::Parsed<RunRequest> parse_run_options(
    const std::vector<std::string>& args);

/// The server a run goes to: --host, else MOLD_HOST; none with --local.
/// Throws tools::UsageError for a flag that only a run here takes.
std::optional<RemoteRun> remote_target(const RunRequest& r);

/// Runs `request` here with the source images' PNG bytes (`images_png`, one
/// per request.image_files): in mold-torch (run.cpp); `mold` hands the whole
/// command to mold-torch instead (twin_runs.cpp).
int run_local(const RunRequest& request,
              const std::vector<std::string>& images_png);

}  // namespace mold_cli
