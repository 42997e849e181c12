// molddiag tiling: decode the same latent whole, with bounded convolutions and
// in tiles; peak bytes, time, and the difference from the whole decode
// globally, per quadrant and in the seam bands.

#include <ATen/Context.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/plan/tile_plan.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/vae_runner.hpp>
#include <mold/tensor/tiled.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "family_vae.hpp"
#include "tiling_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct Difference {
  double relative_l2 = 0, max_abs = 0;
};

/// One decode of the latent and how it compares with the whole decode.
struct TilingRun {
  std::string name;
  double seconds = 0;
  mold::Bytes peak = 0;
  double peak_ratio_whole_over_this = 0, time_ratio_this_over_whole = 0;
  Difference all, seams;
  /// Top-left, top-right, bottom-left, bottom-right.
  std::array<Difference, 4> quadrants;
};

struct TilingResult {
  std::size_t tiles = 0;  ///< in the plan
  std::vector<TilingRun> runs;
};

Difference difference(const at::Tensor& got, const at::Tensor& reference,
                      const at::Tensor& mask) {
  at::Tensor delta = got - reference;
  at::Tensor ref = reference;
  if (mask.defined()) {
    delta = delta.masked_select(mask.expand_as(delta));
    ref = ref.masked_select(mask.expand_as(ref));
  }
  if (delta.numel() == 0) return {};
  return {
      delta.norm().item<double>() / std::max(ref.norm().item<double>(), 1e-30),
      delta.abs().max().item<double>()};
}

/// Output pixels covered by more than one tile of the plan.
at::Tensor seam_mask(const mold::TilePlan& plan, int scale) {
  at::Tensor count = at::zeros(
      {1, 1, int64_t(plan.height) * scale, int64_t(plan.width) * scale},
      at::kInt);
  for (const auto& t : plan.tiles)
    count.narrow(2, int64_t(t.y0) * scale, int64_t(t.y1 - t.y0) * scale)
        .narrow(3, int64_t(t.x0) * scale, int64_t(t.x1 - t.x0) * scale)
        .add_(1);
  return count.gt(1);
}

TilingResult run(const tools::Host& host, const TilingRequest& request) {
  at::globalContext().setUserEnabledMkldnn(request.mkldnn);
  const int latent = request.size / 8;
  const auto vae = make_family_vae(*host.registry, request.family, request.arch,
                                   request.seed);
  at::Generator generator = at::detail::createCPUGenerator(request.seed + 1);
  const at::Tensor latent_tensor = vae->unscale_latent(at::randn(
      {1, vae->latent_channels(), latent, latent}, generator, at::kFloat));
  auto cpu = mold::CpuBackend::instance();

  struct Decode {
    std::string name;
    mold::VaeJob job;
    at::Tensor output;
    double seconds = 0;
    mold::Bytes peak = 0;
  };
  std::vector<Decode> decodes;
  auto add = [&](std::string name, mold::VaeMode mode, mold::Blend blend) {
    Decode d{std::move(name), {}, {}, 0, 0};
    d.job.op = std::string(mold::ops::kVaeDecode);
    d.job.input = latent_tensor;
    d.job.mode = mode;
    d.job.tile = request.tile;
    d.job.overlap = request.overlap;
    d.job.blend = blend;
    d.job.workspace_bound = request.workspace_bound;
    decodes.push_back(std::move(d));
  };
  add("whole", mold::VaeMode::whole, mold::Blend::smootherstep);
  add("bounded", mold::VaeMode::bounded, mold::Blend::smootherstep);
  add("tiled_linear", mold::VaeMode::tiled, mold::Blend::linear);
  add("tiled_smootherstep", mold::VaeMode::tiled, mold::Blend::smootherstep);
  for (auto& d : decodes) {
    const mold::Bytes live = cpu->stats().allocated;
    cpu->reset_peak();
    const auto start = std::chrono::steady_clock::now();
    d.output = mold::run_vae(*vae, *host.registry, d.job, cpu, cpu).output;
    d.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    d.peak = cpu->stats().peak_allocated - live;
  }

  const mold::TilePlan plan =
      mold::plan_tiles(latent, latent, request.tile, request.overlap);
  const at::Tensor seams = seam_mask(plan, vae->spatial_scale());
  const int64_t half = request.size / 2;
  TilingResult result;
  result.tiles = plan.tiles.size();
  const Decode& whole = decodes.front();
  for (const auto& d : decodes) {
    TilingRun row;
    row.name = d.name;
    row.seconds = d.seconds;
    row.peak = d.peak;
    row.peak_ratio_whole_over_this =
        double(whole.peak) / double(std::max<mold::Bytes>(d.peak, 1));
    row.time_ratio_this_over_whole = d.seconds / whole.seconds;
    row.all = difference(d.output, whole.output, {});
    for (int q = 0; q < 4; ++q) {
      const at::Tensor a = d.output.narrow(2, (q / 2) * half, half)
                               .narrow(3, (q % 2) * half, half);
      const at::Tensor b = whole.output.narrow(2, (q / 2) * half, half)
                               .narrow(3, (q % 2) * half, half);
      row.quadrants[q] = difference(a, b, {});
    }
    row.seams = difference(d.output, whole.output, seams);
    result.runs.push_back(row);
  }
  return result;
}

nlohmann::json to_json(const TilingRequest& request,
                       const TilingResult& result) {
  nlohmann::json out = {{"family", request.family},
                        {"arch", request.arch},
                        {"size", request.size},
                        {"tile", request.tile},
                        {"overlap", request.overlap},
                        {"tiles", result.tiles},
                        {"mkldnn", request.mkldnn},
                        {"workspace_bound", request.workspace_bound}};
  out["runs"] = nlohmann::json::array();
  for (const auto& r : result.runs) {
    nlohmann::json row = {
        {"name", r.name},
        {"seconds", r.seconds},
        {"peak_bytes", r.peak},
        {"peak_ratio_whole_over_this", r.peak_ratio_whole_over_this},
        {"time_ratio_this_over_whole", r.time_ratio_this_over_whole}};
    row["relative_l2"] = r.all.relative_l2;
    row["max_abs"] = r.all.max_abs;
    row["quadrants"] = nlohmann::json::array();
    for (const auto& d : r.quadrants)
      row["quadrants"].push_back(
          {{"relative_l2", d.relative_l2}, {"max_abs", d.max_abs}});
    row["seams"] = {{"relative_l2", r.seams.relative_l2},
                    {"max_abs", r.seams.max_abs}};
    out["runs"].push_back(row);
  }
  return out;
}

void print_text(const TilingRequest& request, const TilingResult& result) {
  std::cout << fmt::format(
      "{} VAE ({}) decode of a {}x{} image: {} tiles of {} latents, overlap "
      "{}; oneDNN {}\n\n",
      request.family, request.arch, request.size, request.size, result.tiles,
      request.tile, request.overlap, request.mkldnn ? "on" : "off");
  std::cout << fmt::format(
      "  {:<20} {:>12} {:>10} {:>8} {:>10} {:>12} {:>10} {:>12}\n", "run",
      "peak", "peak w/x", "seconds", "time x/w", "rel L2", "max |d|",
      "seam rel L2");
  for (const auto& r : result.runs)
    std::cout << fmt::format(
        "  {:<20} {:>12} {:>10.2f} {:>8.2f} {:>10.2f} {:>12.3g} {:>10.3g} "
        "{:>12.3g}\n",
        r.name, mold::format_bytes(r.peak), r.peak_ratio_whole_over_this,
        r.seconds, r.time_ratio_this_over_whole, r.all.relative_l2,
        r.all.max_abs, r.seams.relative_l2);
  std::cout << "\n  per quadrant rel L2 (top-left, top-right, bottom-left, "
               "bottom-right):\n";
  for (const auto& r : result.runs) {
    std::string q;
    for (const auto& d : r.quadrants)
      q += fmt::format(" {:>10.3g}", d.relative_l2);
    std::cout << fmt::format("  {:<20}{}\n", r.name, q);
  }
}

void print(const TilingRequest& request, const TilingResult& result) {
  if (request.json)
    tools::print_json(std::cout, to_json(request, result));
  else
    print_text(request, result);
}

}  // namespace

int tiling_command(const std::vector<std::string>& args) {
  const auto parsed = parse_tiling_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const TilingRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  FailureContext failure;
  failure.registry = host.registry.get();
  failure.verbose = request.verbose;
  failure.device = mold::CpuBackend::instance()->device_name();
  if (request.arch ==
      mold::archs::kDefault) {  // the estimators describe this one only
    mold::Workload w;
    w.family = request.family;
    w.op = std::string(mold::ops::kVaeDecode);
    w.backend = "cpu";
    w.dtype = "float32";
    w.height = w.width = request.size;
    failure.workload = w;
  }
  failure.extra_hints.push_back(
      "a smaller --size: every run decodes the whole image once");
  TilingResult result;
  try {
    result = run(host, request);
  } catch (...) {
    rethrow_readable(failure);
  }
  print(request, result);
  return tools::kOk;
}

}  // namespace molddiag
