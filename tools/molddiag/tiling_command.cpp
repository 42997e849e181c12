// molddiag tiling: decode the same latent whole, with bounded convolutions and
// in tiles; peak bytes, time, and the difference from the whole decode
// globally, per quadrant and in the seam bands.

#include <ATen/Context.h>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/vae_runner.hpp>
#include <mold/tensor/tiled.hpp>
#include <nlohmann/json.hpp>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

namespace {

struct Difference {
  double relative_l2 = 0, max_abs = 0;
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

}  // namespace

int tiling_command(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string family, config = "default", workspace = "64 MiB", mkldnn = "on";
  int size = 256, tile = 0, overlap = -1;
  std::uint64_t seed = 0;
  bool json = false;
  po::options_description options(
      "molddiag tiling --family F [--size N] [--tile T] [--json]\n\n"
      "Decodes one seeded latent of an N x N image whole, with bounded "
      "convolutions, and\n"
      "in tiles blended linearly and with smootherstep; prints each run's peak "
      "bytes\n"
      "(measured by the cpu backend's allocator), time, and relative L2 and "
      "max |d| against\n"
      "the whole decode: over the image, per quadrant, and in the seam bands "
      "(pixels two\n"
      "tiles cover). Exit: 0 done; 1 failed; 2 usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")("family", po::value(&family),
                                               "qwen_image or zimage")(
      "size", po::value(&size)->default_value(256),
      "image edge in pixels (multiple of 8)")(
      "tile", po::value(&tile)->default_value(0),
      "tile edge in latent units (default: half the latent)")(
      "overlap", po::value(&overlap)->default_value(-1),
      "overlap in latent units (default tile/4)")(
      "arch", po::value(&config)->default_value("default"),
      "default or tiny architecture")(
      "seed", po::value(&seed)->default_value(0), "weights and latent seed")(
      "workspace", po::value(&workspace)->default_value("64 MiB"),
      "bound for the bounded run")(
      "mkldnn", po::value(&mkldnn)->default_value("on"),
      "on: oneDNN convolutions; off: libtorch's im2col path")(
      "json", po::bool_switch(&json), "print JSON");
  add_common_options(options, common);
  const auto vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return kOk;
  }
  if (family.empty()) throw UsageError("--family is required");
  if (size <= 0 || size % 8)
    throw UsageError(
        fmt::format("--size {} must be a positive multiple of 8", size));
  if (mkldnn != "on" && mkldnn != "off")
    throw UsageError("--mkldnn takes on or off");
  const int latent = size / 8;
  if (tile == 0) tile = std::max(1, latent / 2);
  if (overlap < 0) overlap = tile / 4;
  if (tile <= overlap)
    throw UsageError(fmt::format("--tile {} must be larger than --overlap {}",
                                 tile, overlap));
  mold::Bytes bound = 0;
  try {
    bound = mold::parse_bytes(workspace);
  } catch (const mold::ParseError& e) {
    throw UsageError(e.what());
  }
  at::globalContext().setUserEnabledMkldnn(mkldnn == "on");

  const DiagContext context = make_context(common);
  const auto vae = make_family_vae(*context.registry, family, config, seed);
  at::Generator generator = at::detail::createCPUGenerator(seed + 1);
  const at::Tensor latent_tensor = vae->unscale_latent(at::randn(
      {1, vae->latent_channels(), latent, latent}, generator, at::kFloat));
  auto cpu = mold::CpuBackend::instance();

  struct Run {
    std::string name;
    mold::VaeJob job;
    at::Tensor output;
    double seconds = 0;
    mold::Bytes peak = 0;
  };
  std::vector<Run> runs;
  auto add = [&](std::string name, mold::VaeMode mode, mold::Blend blend) {
    Run r{std::move(name), {}, {}, 0, 0};
    r.job.op = std::string(mold::ops::kVaeDecode);
    r.job.input = latent_tensor;
    r.job.mode = mode;
    r.job.tile = tile;
    r.job.overlap = overlap;
    r.job.blend = blend;
    r.job.workspace_bound = bound;
    runs.push_back(std::move(r));
  };
  add("whole", mold::VaeMode::whole, mold::Blend::smootherstep);
  add("bounded", mold::VaeMode::bounded, mold::Blend::smootherstep);
  add("tiled_linear", mold::VaeMode::tiled, mold::Blend::linear);
  add("tiled_smootherstep", mold::VaeMode::tiled, mold::Blend::smootherstep);
  for (auto& r : runs) {
    const mold::Bytes live = cpu->stats().allocated;
    cpu->reset_peak();
    const auto start = std::chrono::steady_clock::now();
    r.output = mold::run_vae(*vae, *context.registry, r.job, cpu, cpu).output;
    r.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    r.peak = cpu->stats().peak_allocated - live;
  }

  const mold::TilePlan plan = mold::plan_tiles(latent, latent, tile, overlap);
  const at::Tensor seams = seam_mask(plan, vae->spatial_scale());
  const int64_t half = size / 2;
  nlohmann::json out = {{"family", family},
                        {"config", config},
                        {"size", size},
                        {"tile", tile},
                        {"overlap", overlap},
                        {"tiles", plan.tiles.size()},
                        {"mkldnn", mkldnn == "on"},
                        {"workspace_bound", bound}};
  out["runs"] = nlohmann::json::array();
  const Run& whole = runs.front();
  for (const auto& r : runs) {
    nlohmann::json row = {
        {"name", r.name},
        {"seconds", r.seconds},
        {"peak_bytes", r.peak},
        {"peak_ratio_whole_over_this",
         double(whole.peak) / double(std::max<mold::Bytes>(r.peak, 1))},
        {"time_ratio_this_over_whole", r.seconds / whole.seconds}};
    const Difference all = difference(r.output, whole.output, {});
    row["relative_l2"] = all.relative_l2;
    row["max_abs"] = all.max_abs;
    row["quadrants"] = nlohmann::json::array();
    for (int q = 0; q < 4; ++q) {
      const at::Tensor a = r.output.narrow(2, (q / 2) * half, half)
                               .narrow(3, (q % 2) * half, half);
      const at::Tensor b = whole.output.narrow(2, (q / 2) * half, half)
                               .narrow(3, (q % 2) * half, half);
      const Difference d = difference(a, b, {});
      row["quadrants"].push_back(
          {{"relative_l2", d.relative_l2}, {"max_abs", d.max_abs}});
    }
    const Difference seam = difference(r.output, whole.output, seams);
    row["seams"] = {{"relative_l2", seam.relative_l2},
                    {"max_abs", seam.max_abs}};
    out["runs"].push_back(row);
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  std::cout << fmt::format(
      "{} VAE ({}) decode of a {}x{} image: {} tiles of {} latents, overlap "
      "{}; oneDNN {}\n\n",
      family, config, size, size, plan.tiles.size(), tile, overlap, mkldnn);
  std::cout << fmt::format(
      "  {:<20} {:>12} {:>10} {:>8} {:>10} {:>12} {:>10} {:>12}\n", "run",
      "peak", "peak w/x", "seconds", "time x/w", "rel L2", "max |d|",
      "seam rel L2");
  for (const auto& row : out["runs"])
    std::cout << fmt::format(
        "  {:<20} {:>12} {:>10.2f} {:>8.2f} {:>10.2f} {:>12.3g} {:>10.3g} "
        "{:>12.3g}\n",
        row["name"].get<std::string>(),
        mold::format_bytes(row["peak_bytes"].get<mold::Bytes>()),
        row["peak_ratio_whole_over_this"].get<double>(),
        row["seconds"].get<double>(),
        row["time_ratio_this_over_whole"].get<double>(),
        row["relative_l2"].get<double>(), row["max_abs"].get<double>(),
        row["seams"]["relative_l2"].get<double>());
  std::cout << "\n  per quadrant rel L2 (top-left, top-right, bottom-left, "
               "bottom-right):\n";
  for (const auto& row : out["runs"]) {
    std::string q;
    for (const auto& d : row["quadrants"])
      q += fmt::format(" {:>10.3g}", d["relative_l2"].get<double>());
    std::cout << fmt::format("  {:<20}{}\n", row["name"].get<std::string>(), q);
  }
  return kOk;
}

}  // namespace molddiag
