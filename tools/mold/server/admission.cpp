#include "admission.hpp"

#include <fmt/format.h>

#include <mold/base/bytes.hpp>
#include <mold/net/api_error.hpp>
#include <string>

#include "generation/run_plan.hpp"

namespace mold_cli {

namespace codes = mold::net::codes;
using Json = nlohmann::json;

std::optional<ApiFailure> admit(
    ModelEntry& entry, const mold::ResolvedRequest& resolved,
    const mold::tools::Host& host, const ServerDevice& where,
    const std::shared_ptr<mold::MeasuredHistory>& history) {
  mold::Bytes own = 0;
  for (const auto& e : entry.cache->entries())
    if (e.residency == mold::Residency::device) own += e.bytes;
  const DeviceRoom room = room_on_device(entry.cache->backend().stats(), own);
  auto estimate = [&](const mold::Workload& w) {
    mold::RunContext context(*entry.cache, *host.registry, {});
    context.set_history(history, "mold serve");
    return context.estimate(w);
  };
  const PlanVerdict verdict =
      judge_plan(entry.runner->plan(resolved), entry.pipeline->components(),
                 room, host.config.cache.working_memory_floor, estimate);
  if (verdict.fits) return std::nullopt;
  const PlanStep& step = verdict.step;
  const mold::Bytes need = verdict.need;
  const std::string origin =
      step.estimate.learned_runs > 0
          ? fmt::format(" (estimate: {})", step.estimate.source)
          : std::string();
  ApiFailure failure;
  if (verdict.never) {
    failure = api_failure(
        codes::kNeverFits,
        fmt::format(
            "this server ({} on {}) will never fit an image of {} at {}x{}: "
            "its {} phase {}, and {} is the most this device can give the "
            "model with everything else parked and every other process "
            "gone (short by {}){}. Lower the size, use a smaller variant, or "
            "send it to a server with more memory; retrying here will not "
            "help",
            where.backend, where.device, entry.pipeline->model(),
            resolved->width, resolved->height, step.phase.phase, step.problem,
            mold::format_bytes(room.ever),
            mold::format_bytes(need > room.ever ? need - room.ever : 0),
            origin));
  } else {
    failure = api_failure(
        codes::kInsufficientMemory,
        fmt::format(
            "this server ({} on {}) cannot make an image of {} at {}x{} now: "
            "its {} phase {}. It has {} for the model's work now; {} is in "
            "use by other processes or by memory that will be freed. Retry "
            "later (Retry-After), or send it to a server with more free "
            "memory{}",
            where.backend, where.device, entry.pipeline->model(),
            resolved->width, resolved->height, step.phase.phase, step.problem,
            mold::format_bytes(room.now),
            mold::format_bytes(room.ever - room.now), origin));
    failure.headers = {{"Retry-After", std::to_string(kRetryAfterNoRoom)}};
  }
  const bool retry = !verdict.never;
  failure.oom = Json{{"admission",
                      {{"phase", step.phase.phase},
                       {"component", step.phase.component},
                       {"estimate_bytes", step.estimate.bytes},
                       {"estimate_origin", step.estimate.origin},
                       {"estimate_source", step.estimate.source},
                       {"weights_bytes", step.component_bytes},
                       {"needed_bytes", need},
                       {"available_bytes", room.now},
                       {"device_max_bytes", room.ever},
                       {"retry", retry},
                       {"verdict", retry ? "not now" : "never fits"},
                       {"backend", where.backend},
                       {"device", where.device}}}};
  return failure;
}

}  // namespace mold_cli
