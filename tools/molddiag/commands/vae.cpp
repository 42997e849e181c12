// molddiag vae encode|decode: one VAE operation on tensors from a safetensors
// file.

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/cache/recovery.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/vae_runner.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <nlohmann/json.hpp>
#include <utility>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "family_vae.hpp"
#include "vae_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct VaeResult {
  std::string input_name, output_name;  ///< "sample" or "latent"
  std::vector<int64_t> shape;           ///< the output tensor's
  std::string rung;
  std::vector<mold::RecoveryAttempt> attempts;
  double seconds = 0;
  mold::Bytes live = 0;        ///< the backend's bytes before the operation
  mold::Bytes peak_above = 0;  ///< its peak during the operation, above `live`
};

/// Reads the input, runs the job and writes the output file. Fills in
/// `failure`'s workload once the input's size is known.
VaeResult run(const tools::Host& host, const VaeRequest& request,
              FailureContext& failure) {
  const auto vae = make_family_vae(*host.registry, request.family, request.arch,
                                   request.seed);
  if (!request.weights.empty()) {
    const mold::WeightSet weights = mold::WeightSet::open(request.weights);
    const mold::LoadReport report =
        vae->load(weights, vae->device(), at::kFloat);
    if (!report.warning().empty())
      fmt::print(stderr, "molddiag vae: warning: {}: {}\n",
                 weights.origin().string(), report.warning());
  }

  mold::VaeJob job(request.settings);
  const bool encode = job.op == mold::ops::kVaeEncode;
  VaeResult result;
  result.input_name = encode ? "sample" : "latent";
  result.output_name = encode ? "latent" : "sample";
  at::Tensor input = mold::SafetensorsFile::open(request.input_path)
                         .tensor(result.input_name)
                         .to(at::kFloat);
  job.input_name =
      fmt::format("{}: tensor '{}'", request.input_path, result.input_name);
  if (input.dim() == 5 && input.size(2) == 1) input = input.squeeze(2);
  if (input.dim() == 5)
    throw mold::InvalidArgument(fmt::format(
        "{} has shape {}: {} frames; a VAE here takes single images: give "
        "(N, C, H, W) or (N, C, 1, H, W)",
        job.input_name, c10::str(input.sizes()), input.size(2)));
  // Checked before unscale_latent, so that the message names the file and the
  // tensor as they are.
  job.input = input;
  try {
    mold::check_vae_job(*vae, job);
  } catch (const mold::NonFiniteInput& e) {
    throw mold::InvalidArgument(std::string(e.what()) +
                                " (--allow-nonfinite runs it anyway)");
  }
  if (request.arch ==
      mold::archs::kDefault) {  // the estimators describe this one only
    mold::Workload w;
    w.family = request.family;
    w.op = job.op;
    w.backend = request.backend;
    w.dtype = job.dtype;
    w.batch = int(input.size(0));
    const int64_t scale = encode ? 1 : vae->spatial_scale();
    w.height = int(input.size(2) * scale);
    w.width = int(input.size(3) * scale);
    failure.workload = w;
  }
  if (!encode && !request.raw_latent) job.input = vae->unscale_latent(input);

  auto backend = host.registry->create_backend(request.backend);
  auto cpu = host.registry->create_backend("cpu");
  failure.device = backend->device_name();
  backend->reset_peak();
  result.live = backend->stats().allocated;
  const auto start = std::chrono::steady_clock::now();
  mold::VaeJobResult ran =
      mold::run_vae(*vae, *host.registry, job, backend, cpu);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const mold::Bytes peak = backend->stats().peak_allocated;
  result.peak_above = peak > result.live ? peak - result.live : 0;
  at::Tensor output = ran.output;
  if (encode && !request.raw_latent) output = vae->scale_latent(output);
  mold::save_safetensors(
      request.output_path, {{result.output_name, output}},
      {{"family", request.family},
       {"op", job.op},
       {"rung", ran.rung},
       {"latent_space", request.raw_latent ? "raw" : "scaled"}});
  result.shape = output.sizes().vec();
  result.rung = std::move(ran.rung);
  result.attempts = std::move(ran.attempts);
  return result;
}

nlohmann::json to_json(const VaeRequest& request, const VaeResult& result) {
  nlohmann::json out = {
      {"family", request.family},
      {"op", request.settings.op},
      {"arch", request.arch},
      {"weights", request.weights.empty() ? "seed" : request.weights},
      {"mode", request.mode},
      {"rung", result.rung},
      {"output", request.output_path},
      {"shape", result.shape},
      {"seconds", result.seconds},
      {"peak_bytes", result.peak_above},
      {"backend", request.backend}};
  out["attempts"] = nlohmann::json::array();
  for (const auto& a : result.attempts)
    out["attempts"].push_back(
        {{"rung", a.rung},
         {"outcome", std::string(mold::to_string(a.outcome))},
         {"seconds", a.seconds},
         {"peak_bytes", a.peak_bytes},
         {"error", a.error}});
  return out;
}

void print_text(const VaeRequest& request, const VaeResult& result) {
  std::cout << fmt::format("{} {} ({}, {}): {} -> '{}' {} in {}\n",
                           request.family, request.settings.op, request.arch,
                           result.rung, result.input_name, result.output_name,
                           c10::str(at::IntArrayRef(result.shape)),
                           request.output_path);
  std::cout << fmt::format(
      "  {:.2f} s, peak {} above the {} live before\n", result.seconds,
      mold::format_bytes(result.peak_above), mold::format_bytes(result.live));
  for (const auto& a : result.attempts)
    std::cout << fmt::format("  {}: {}{}\n", a.rung, mold::to_string(a.outcome),
                             a.error.empty() ? "" : " (" + a.error + ")");
}

void print(const VaeRequest& request, const VaeResult& result) {
  if (request.json)
    tools::print_json(std::cout, to_json(request, result));
  else
    print_text(request, result);
}

}  // namespace

int vae_command(const std::vector<std::string>& args) {
  const auto parsed = parse_vae_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const VaeRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  FailureContext failure;
  failure.registry = host.registry.get();
  failure.backend = request.backend;
  failure.verbose = request.verbose;
  if (request.settings.mode != mold::VaeMode::ladder)
    failure.extra_hints.push_back(
        "--mode ladder retries it with bounded convolutions, in tiles and on "
        "the cpu");
  VaeResult result;
  try {
    result = run(host, request, failure);
  } catch (...) {
    rethrow_readable(failure);
  }
  print(request, result);
  return tools::kOk;
}

}  // namespace molddiag
