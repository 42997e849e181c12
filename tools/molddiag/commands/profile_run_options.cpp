// The options of molddiag leak's and parity's local driver
// (profile_driver.hpp), apart from the driver: molddiag parses them without
// libtorch.

#include <mold/estimate/workload.hpp>

#include "common/generate_options.hpp"
#include "common/options.hpp"
#include "profile_driver.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

void add_profile_run_options(po::options_description& options, ProfileRun& r,
                             int default_images, int min_images) {
  options.add_options()("model", po::value(&r.model_spec),
                        "MODEL[:VARIANT], e.g. z-image-turbo")(
      "tiny", po::bool_switch(&r.tiny),
      "the tiny architecture with seeded weights (no download)")(
      "model-dir", po::value(&r.model_dirs)->composing(),
      "a model directory, or a directory of them (repeatable)")(
      "dtype", po::value(&r.dtype),
      "float32, float16 or bfloat16 (default: bfloat16; float32 with "
      "--tiny)")("backend", po::value(&r.backend)->default_value("cpu"),
                 "cpu, cuda, ...")(
      "image", po::value(&r.source_images)->composing(),
      "a PNG every image edits (edit models; repeatable, in order)");
  tools::add_ranged_int(options, "images", &r.images, min_images,
                        mold::kMaxBatch, "images to make, one after another",
                        default_images);
  // Every field of a generate request but its batch (--images).
  tools::add_generate_options(options, r.generate,
                              {"prompt", "negative_prompt", "width", "height",
                               "steps", "guidance", "seed"});
  options.add_options()("quiet", po::bool_switch(&r.quiet),
                        "no progress line per image on stderr")(
      "verbose", po::bool_switch(&r.verbose),
      "on a libtorch error, print its full text, C++ backtrace included");
  tools::add_host_options(options, r.host);
}

}  // namespace molddiag
