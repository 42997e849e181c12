#include "mold/runtime/vae_runner.hpp"

#include <c10/core/Device.h>
#include <fmt/format.h>

#include <cmath>

#include "mold/estimate/workload.hpp"
#include "mold/plugin/registry.hpp"
#include "mold/tensor/compute_threads.hpp"
#include "mold/tensor/tensor_component.hpp"
#include "mold/tensor/tiled.hpp"

namespace mold {

namespace {

bool is_decode(const VaeJob& job) { return job.op == ops::kVaeDecode; }

/// How many values are NaN or Inf. A finite sum proves there are none, with no
/// tensor of the input's size (a NaN or an Inf makes the sum non-finite); only
/// a non-finite sum (a bad value, or finite ones that overflow) counts them.
int64_t count_nonfinite(const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return 0;
  if (std::isfinite(t.sum().item<double>())) return 0;
  return at::isfinite(t).logical_not().sum().item<int64_t>();
}

/// check_output()'s second test alone: all zeros while the input is not.
void check_not_silent_zero(const at::Tensor& output, const at::Tensor& input) {
  if (!output.defined())
    throw InvalidOutput("the operation produced no tensor");
  if (output.numel() > 0 && !output.ne(0).any().item<bool>() &&
      input.numel() > 0 && input.ne(0).any().item<bool>())
    throw InvalidOutput(
        fmt::format("silent zero output: the output of shape {} is all zeros "
                    "while the input is not",
                    c10::str(output.sizes())));
}

/// One run of the operation on `device`, whole or in tiles.
at::Tensor run_once(Vae& vae, const VaeJob& job, const c10::Device& device,
                    const VaeRunOptions& options, int tile) {
  vae.to(device);  // the cpu rung brings the weights back to host memory
  const at::Tensor input = job.input.to(device);
  auto op = [&](const at::Tensor& x) {
    return is_decode(job) ? vae.decode(x, options) : vae.encode(x, options);
  };
  if (tile <= 0) return op(input);
  const int scale = vae.spatial_scale();
  const int latent_h =
      int(is_decode(job) ? input.size(2) : input.size(2) / scale);
  const int latent_w =
      int(is_decode(job) ? input.size(3) : input.size(3) / scale);
  const int overlap = std::min(job.overlap, tile / 2);
  const TilePlan plan = plan_tiles(latent_h, latent_w, tile, overlap);
  return run_tiled(input, plan, is_decode(job) ? 1 : scale,
                   is_decode(job) ? scale : 1, job.blend, op);
}

std::optional<Bytes> estimate_for(const Registry& registry, const Vae& vae,
                                  const VaeJob& job, const std::string& backend,
                                  int tile, Bytes attention_bound = 0) {
  if (!job.predict) return std::nullopt;
  Workload w;
  w.family = vae.family();
  w.arch = vae.arch();  // the tiny VAE has tables of its own
  w.attention_bound = attention_bound;
  w.op = job.op;
  w.backend = backend;
  w.dtype = job.dtype;
  w.batch = int(job.input.size(0));
  const int64_t scale = is_decode(job) ? vae.spatial_scale() : 1;
  w.height = int(job.input.size(2) * scale);
  w.width = int(job.input.size(3) * scale);
  w.tile = tile;
  w.threads = compute_threads(backend);
  try {
    return registry.estimate(w).bytes;
  } catch (const Error&) {
    return std::nullopt;  // no estimator: the rung is tried, not predicted
  }
}

}  // namespace

void check_vae_job(const Vae& vae, const VaeJob& job) {
  if (job.op != ops::kVaeDecode && job.op != ops::kVaeEncode)
    throw InvalidArgument(
        fmt::format("a VAE runs vae_encode or vae_decode, not '{}'", job.op));
  const VaeInput kind = is_decode(job) ? VaeInput::latent : VaeInput::image;
  vae.check_input(kind, job.input, job.input_name);
  if (job.allow_nonfinite) return;
  const int64_t bad = count_nonfinite(job.input);
  if (bad == 0) return;
  const int64_t nan = at::isnan(job.input).sum().item<int64_t>();
  throw NonFiniteInput(
      fmt::format("{} has {} of its {} values not finite ({} NaN, {} Inf): "
                  "a VAE spreads them over its output as NaN; give finite "
                  "values",
                  job.input_name.empty()
                      ? (is_decode(job) ? "the latent" : "the image")
                      : job.input_name,
                  bad, job.input.numel(), nan, bad - nan),
      bad);
}

VaeJobResult run_vae(Vae& vae, const Registry& registry, const VaeJob& job,
                     const std::shared_ptr<Backend>& backend,
                     const std::shared_ptr<Backend>& cpu) {
  check_vae_job(vae, job);
  // NaN in, NaN out is what an allowed non-finite input asks for.
  const bool finite_input =
      !job.allow_nonfinite || count_nonfinite(job.input) == 0;
  auto validate = [&](const at::Tensor& output) {
    if (finite_input)
      check_output(output, job.input);
    else
      check_not_silent_zero(output, job.input);
  };

  const c10::Device device = backend->torch_device();
  VaeRunOptions whole_options;
  VaeRunOptions bounded_options;
  bounded_options.bounded = true;
  bounded_options.workspace_bound = job.workspace_bound;

  VaeJobResult result;
  if (job.mode != VaeMode::ladder) {
    const bool tiled = job.mode == VaeMode::tiled;
    result.output =
        run_once(vae, job, device,
                 job.mode == VaeMode::bounded ? bounded_options : whole_options,
                 tiled ? job.tile : 0)
            .to(c10::Device(c10::kCPU));
    backend->synchronize_and_check();
    result.rung = tiled ? fmt::format("tiles_{}", job.tile)
                        : std::string(to_string(job.mode));
    try {
      validate(result.output);
    } catch (const InvalidOutput& e) {
      throw InvalidOutput(fmt::format(
          "{} ({}) gave no valid result: {}; check the weights (finite, a "
          "checkpoint of this family) and the input, or run it as a ladder "
          "(bounded, tiles, cpu)",
          job.op, result.rung, e.what()));
    }
    return result;
  }

  at::Tensor output;
  auto rung = [&](std::string name, std::shared_ptr<Backend> on,
                  VaeRunOptions options, int tile,
                  std::optional<Bytes> estimate) {
    RecoveryRung r;
    r.name = std::move(name);
    r.backend = on;
    r.working_bytes = estimate;
    const c10::Device rung_device = on->torch_device();
    r.run = [&, rung_device, options, tile] {
      output = run_once(vae, job, rung_device, options, tile);
    };
    r.validate = [&] { validate(output); };
    return r;
  };
  std::vector<RecoveryRung> rungs;
  rungs.push_back(rung("whole", backend, whole_options, 0,
                       estimate_for(registry, vae, job, backend->name(), 0)));
  // Bounded: the whole's activations, the attention's scores in chunks under
  // the workspace bound.
  rungs.push_back(rung("bounded", backend, bounded_options, 0,
                       estimate_for(registry, vae, job, backend->name(), 0,
                                    job.workspace_bound)));
  for (const int tile : kLadderTiles)
    rungs.push_back(
        rung(fmt::format("tiles_{}", tile), backend, whole_options, tile,
             estimate_for(registry, vae, job, backend->name(), tile)));
  rungs.push_back(rung("cpu", cpu, bounded_options, 16, std::nullopt));
  const RecoveryResult recovery =
      RecoveryPolicy(registry.classifier()).run(job.op, rungs);
  result.output = output.to(c10::Device(c10::kCPU));
  result.rung = recovery.rung;
  result.attempts = recovery.attempts;
  return result;
}

}  // namespace mold
