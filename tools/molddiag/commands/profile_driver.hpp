#pragma once
/// The local driver of molddiag leak and parity: N images of a model through
/// the runtime (seed + i each), recorded by a ProfileRecorder, with a
/// progress line per image on stderr. Includes libtorch through the runtime.

#include <boost/program_options.hpp>
#include <cstdint>
#include <mold/plan/generate_settings.hpp>
#include <mold/profile/memory_profile.hpp>
#include <string>
#include <vector>

#include "common/host.hpp"
#include "common/options.hpp"

namespace molddiag {

struct ProfileRun {
  mold::tools::HostOptions host;
  std::string model_spec;  ///< MODEL[:VARIANT]
  bool tiny = false;
  std::vector<std::string> model_dirs;
  std::string dtype;  ///< "": float32 with --tiny, bfloat16 otherwise
  std::string backend = "cpu";
  /// An edit model's source images (--image), PNG files in order.
  std::vector<std::string> source_images;
  int images = 0;
  /// What every image is made with (image i with seed + i); its batch is
  /// `images`.
  mold::GenerateSettings generate = [] {
    mold::GenerateSettings settings;
    settings.prompt = "a red fox in the snow";
    return settings;
  }();
  bool quiet = false;  ///< no progress lines
  bool verbose = false;
};

/// Adds the driver's options (the model is positional) to `options`.
void add_profile_run_options(
    boost::program_options::options_description& options, ProfileRun& run,
    int default_images, int min_images);

/// Runs it. Failures are reported as mold run reports them (the label and
/// hints of an out-of-memory error).
mold::MemoryProfile run_profile(const ProfileRun& run);

}  // namespace molddiag
