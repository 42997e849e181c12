// molddiag estimate: the working-memory estimate of one operation.

#include <fmt/format.h>

#include <iostream>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

int estimate_command(const std::vector<std::string>& args) {
  CommonOptions common;
  mold::Workload w;
  bool json = false;
  po::options_description options(
      "molddiag estimate --family F --op O --backend B --width W --height H "
      "[options]\n\n"
      "Prints the working memory the operation needs beyond its weights: the "
      "bytes a\n"
      "cache must make free before running it, with the terms, whether the "
      "constants\n"
      "were measured on this backend, and where they come from.\n"
      "Exit: 0 estimated; 1 no estimator; 2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "family", po::value(&w.family)->required(),
      "model family: qwen_image, zimage, ...")(
      "op", po::value(&w.op)->required(),
      "vae_decode, vae_encode, denoise, text_encode")(
      "backend", po::value(&w.backend)->required(),
      "cuda, rocm, metal, cpu, ...")("width", po::value(&w.width)->required(),
                                     "image width in pixels")(
      "height", po::value(&w.height)->required(), "image height in pixels")(
      "dtype", po::value(&w.dtype)->default_value("float16"),
      "float16, bfloat16, float32, ...")(
      "batch", po::value(&w.batch)->default_value(1), "images at once")(
      "frames", po::value(&w.frames)->default_value(1), "frames (video VAEs)")(
      "tile", po::value(&w.tile)->default_value(0),
      "tile edge in latent units (0: whole image); the estimate is one tile's")(
      "model", po::value(&w.model),
      "model[:variant], e.g. qwen-image-edit-2511:q4")(
      "json", po::bool_switch(&json),
      "print JSON (fields in docs/molddiag.md)");
  add_common_options(options, common);
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << options << "\n";
    return kOk;
  }
  parse(args, options);
  try {
    w.validate();
  } catch (const mold::Error& e) {
    throw UsageError(e.what());
  }

  const DiagContext context = make_context(common);
  warn_load_errors(*context.registry);
  mold::EstimatorKey key;
  context.registry->find_estimator(w, &key);
  const mold::Estimate estimate = context.registry->estimate(w);

  if (json) {
    nlohmann::json out = {{"family", w.family},
                          {"op", w.op},
                          {"backend", w.backend},
                          {"model", w.model},
                          {"width", w.width},
                          {"height", w.height},
                          {"dtype", w.dtype},
                          {"batch", w.batch},
                          {"frames", w.frames},
                          {"tile", w.tile},
                          {"bytes", estimate.bytes},
                          {"human", mold::format_bytes(estimate.bytes)},
                          {"calibrated", estimate.calibrated},
                          {"source", estimate.source},
                          {"estimator", key.to_string()}};
    out["terms"] = nlohmann::json::array();
    for (const auto& t : estimate.terms)
      out["terms"].push_back(
          {{"name", t.name}, {"bytes", t.bytes}, {"detail", t.detail}});
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  std::cout << w.describe() << "\n";
  std::cout << fmt::format("estimate:   {} ({} bytes)\n",
                           mold::format_bytes(estimate.bytes), estimate.bytes);
  for (const auto& t : estimate.terms)
    std::cout << fmt::format("  {}: {} = {}\n", t.name,
                             mold::format_bytes(t.bytes), t.detail);
  std::cout << fmt::format("calibrated: {}\n",
                           estimate.calibrated
                               ? "yes"
                               : "no (constants not measured on this "
                                 "backend)");
  std::cout << fmt::format("estimator:  {}\nsource:     {}\n", key.to_string(),
                           estimate.source);
  return kOk;
}

}  // namespace molddiag
