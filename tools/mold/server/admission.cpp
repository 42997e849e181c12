#include "admission.hpp"

#include <fmt/format.h>

#include <mold/base/bytes.hpp>
#include <mold/net/api_error.hpp>
#include <string>

#include "run_plan.hpp"

namespace mold_cli {

namespace codes = mold::net::codes;
using Json = nlohmann::json;

std::optional<ApiFailure> admit(ModelEntry& entry,
                                const mold::GenerateRequest& resolved,
                                const mold::tools::Host& host,
                                const ServerDevice& where) {
  mold::Bytes room = entry.cache->available();
  for (const auto& e : entry.cache->entries())
    if (e.residency == mold::Residency::device) room += e.bytes;
  const auto steps = simulate_plan(
      entry.runner->plan(resolved), entry.pipeline->components(), room,
      host.config.cache.working_memory_floor, [&](const mold::Workload& w) {
        mold::RunContext context(*entry.cache, *host.registry, {});
        return context.estimate(w);
      });
  for (const auto& step : steps) {
    if (step.fits) continue;
    ApiFailure failure = api_failure(
        codes::kInsufficientMemory,
        fmt::format(
            "this server ({} on {}) cannot make an image of {} at {}x{}: its "
            "{} phase {}. It has {} for the model's work even after parking "
            "everything else. Lower the size, use a smaller variant, or send "
            "it to a server with more memory",
            where.backend, where.device, entry.pipeline->model(),
            resolved.width, resolved.height, step.phase.phase, step.problem,
            mold::format_bytes(room)));
    failure.oom = Json{{"admission",
                        {{"phase", step.phase.phase},
                         {"component", step.phase.component},
                         {"estimate_bytes", step.estimate.bytes},
                         {"weights_bytes", step.component_bytes},
                         {"available_bytes", room},
                         {"backend", where.backend},
                         {"device", where.device}}}};
    failure.headers = {{"Retry-After", std::to_string(kRetryAfterNoRoom)}};
    return failure;
  }
  return std::nullopt;
}

}  // namespace mold_cli
