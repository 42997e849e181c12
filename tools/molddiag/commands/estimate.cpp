// molddiag estimate: the working-memory estimate of one operation.

#include <fmt/format.h>

#include <iostream>
#include <mold/base/error.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/history/learned_estimate.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct EstimateRequest {
  tools::HostOptions host;
  mold::Workload workload;
  bool json = false;
  /// The device whose measured history corrects the estimate; "": the
  /// backend's own device, where it can be opened here.
  std::string device;
  bool table_only = false;
};

struct EstimateResult {
  mold::EstimatorKey estimator;
  mold::Estimate estimate;
};

tools::Parsed<EstimateRequest> parse_estimate_options(
    const std::vector<std::string>& args) {
  tools::Parsed<EstimateRequest> parsed;
  EstimateRequest& r = parsed.request;
  mold::Workload& w = r.workload;
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
      "cuda, rocm, metal, cpu, ...");
  tools::add_ranged_int(options, "width", &w.width, 1, mold::kMaxImageSide,
                        "image width in pixels", std::nullopt, true);
  tools::add_ranged_int(options, "height", &w.height, 1, mold::kMaxImageSide,
                        "image height in pixels", std::nullopt, true);
  options.add_options()("dtype", po::value(&w.dtype)->default_value("float16"),
                        "float16, bfloat16, float32, ...");
  tools::add_ranged_int(options, "batch", &w.batch, 1, mold::kMaxBatch,
                        "images at once", 1);
  tools::add_ranged_int(options, "frames", &w.frames, 1, mold::kMaxFrames,
                        "frames (video VAEs)", 1);
  tools::add_ranged_int(
      options, "tile", &w.tile, 0, mold::kMaxTile,
      "tile edge in latent units (0: whole image); the estimate is one tile's",
      0);
  tools::add_ranged_int(options, "tokens", &w.tokens, 0, mold::kMaxTokens,
                        "prompt tokens (text_encode, denoise)", 0);
  tools::add_ranged_int(options, "threads", &w.threads, 1, mold::kMaxThreads,
                        "compute threads (cpu backend; mold run uses its "
                        "--threads, else OMP_NUM_THREADS, else the CPUs it "
                        "may run on)",
                        1);
  options.add_options()("arch", po::value(&w.arch)->default_value("default"),
                        "default (the published architecture) or tiny")(
      "quantized", po::bool_switch(&w.quantized),
      "the weights are held as ggml blocks (a q4 or q8 variant, a GGUF "
      "checkpoint): the estimate adds their dequantization buffer");
  options.add_options()("model", po::value(&w.model),
                        "model[:variant], e.g. qwen-image-edit-2511:q4")(
      "json", po::bool_switch(&r.json),
      "print JSON (fields in docs/molddiag.md)")(
      "device", po::value(&r.device),
      "learn from this device's measured history (the name `molddiag "
      "history` lists); default: the backend's device, where it is here")(
      "table-only", po::bool_switch(&r.table_only),
      "the table's estimate, without what the device's history learned");
  tools::add_host_options(options, r.host);
  // Before parsing: the required options would fail it.
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options);
  try {
    w.validate();
  } catch (const mold::Error& e) {
    throw tools::UsageError(e.what());
  }
  return parsed;
}

EstimateResult run(const tools::Host& host, const EstimateRequest& request) {
  EstimateResult result;
  host.registry->find_estimator(request.workload, &result.estimator);
  result.estimate = host.registry->estimate(request.workload);
  if (request.table_only) return result;
  std::string device = request.device;
  if (device.empty()) {
    try {  // a backend absent here (cuda on a laptop) has no history here
      device = host.registry->create_backend(request.workload.backend)
                   ->device_name();
    } catch (const std::exception&) {
      return result;
    }
  }
  if (const auto history =
          tools::open_history(host, request.workload.backend, device))
    result.estimate = mold::learned_estimate(
        result.estimate, request.workload,
        history->phases_like(request.workload),
        [&](const mold::Workload& w) { return host.registry->estimate(w); },
        device);
  return result;
}

nlohmann::json to_json(const EstimateRequest& request,
                       const EstimateResult& result) {
  const mold::Workload& w = request.workload;
  const mold::Estimate& estimate = result.estimate;
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
                        {"tokens", w.tokens},
                        {"threads", w.threads},
                        {"quantized", w.quantized},
                        {"arch", w.arch},
                        {"bytes", estimate.bytes},
                        {"human", mold::format_bytes(estimate.bytes)},
                        {"calibrated", estimate.calibrated},
                        {"source", estimate.source},
                        {"origin", estimate.origin},
                        {"learned_runs", estimate.learned_runs},
                        {"estimator", result.estimator.to_string()}};
  out["terms"] = nlohmann::json::array();
  for (const auto& t : estimate.terms)
    out["terms"].push_back({{"name", t.name},
                            {"bytes", t.bytes},
                            {"detail", t.detail},
                            {"constant", t.constant},
                            {"basis", t.basis}});
  return out;
}

void print_text(const EstimateRequest& request, const EstimateResult& result) {
  const mold::Estimate& estimate = result.estimate;
  std::cout << request.workload.describe() << "\n";
  std::cout << fmt::format("estimate:   {} ({} bytes)\n",
                           mold::format_bytes(estimate.bytes), estimate.bytes);
  for (const auto& t : estimate.terms)
    std::cout << fmt::format("  {}: {} = {}\n", t.name,
                             mold::format_bytes(t.bytes), t.detail);
  std::cout << fmt::format("calibrated: {}\n",
                           estimate.calibrated
                               ? "yes"
                               : "no (constants not measured on this "
                                 "backend or architecture: see the "
                                 "source)");
  std::cout << fmt::format("origin:     {}\nestimator:  {}\nsource:     {}\n",
                           estimate.origin, result.estimator.to_string(),
                           estimate.source);
}

void print(const EstimateRequest& request, const EstimateResult& result) {
  if (request.json)
    tools::print_json(std::cout, to_json(request, result));
  else
    print_text(request, result);
}

}  // namespace

int estimate_command(const std::vector<std::string>& args) {
  const auto parsed = parse_estimate_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const EstimateRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  print(request, run(host, request));
  return tools::kOk;
}

}  // namespace molddiag
