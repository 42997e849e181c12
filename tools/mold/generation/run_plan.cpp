#include "run_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mold/plan/vae_settings.hpp>

namespace mold_cli {

DeviceRoom room_on_device(const mold::MemoryStats& stats, mold::Bytes own) {
  DeviceRoom room;
  room.now = stats.free + stats.reserved_unallocated() + own;
  // What this process holds besides the model's components: nothing mold
  // can free for it (other models are parked by then).
  const mold::Bytes held = stats.allocated > own ? stats.allocated - own : 0;
  room.ever = stats.total > held ? stats.total - held : 0;
  room.ever = std::max(room.ever, room.now);
  return room;
}

std::vector<PlanStep> simulate_plan(
    const std::vector<mold::PlannedPhase>& phases,
    const std::vector<std::shared_ptr<mold::CachedComponent>>& components,
    mold::Bytes available, mold::Bytes working_floor,
    const std::function<mold::Estimate(const mold::Workload&)>& estimate) {
  std::map<std::string, mold::Bytes> sizes;
  for (const auto& c : components) sizes[c->name()] = c->device_bytes();
  std::vector<std::string> resident;  // least recently used first
  auto held = [&] {
    mold::Bytes total = 0;
    for (const auto& name : resident) total += sizes[name];
    return total;
  };
  std::vector<PlanStep> steps;
  for (const auto& phase : phases) {
    PlanStep step;
    step.phase = phase;
    step.estimate = phase.estimate ? *phase.estimate : estimate(phase.workload);
    const bool loaded =
        phase.component.empty() || std::find(resident.begin(), resident.end(),
                                             phase.component) != resident.end();
    step.component_bytes = loaded ? 0 : sizes[phase.component];
    step.free_before = available > held() ? available - held() : 0;
    // What can be made free: all but the phase's own component parked.
    mold::Bytes others = 0;
    for (const auto& name : resident)
      if (name != phase.component) others += sizes[name];
    auto need_of = [&](const mold::Estimate& e) {
      return std::max(e.bytes, working_floor) + step.component_bytes;
    };
    // A VAE phase whose whole does not fit runs as the ladder's first rung
    // that does (bounded, then tiles), as RunContext::run_phase asks for it.
    const mold::Bytes whole_need = need_of(step.estimate);
    if (!phase.estimate && available + others < held() + whole_need)
      for (const mold::Workload& rung :
           mold::vae_fallback_workloads(phase.workload)) {
        step.estimate = estimate(rung);
        step.phase.workload = rung;
        step.note = fmt::format(
            "{}: the whole needs {}",
            rung.tile > 0 ? fmt::format("tiles of {} latents", rung.tile)
                          : std::string("bounded"),
            mold::format_bytes(whole_need));
        if (available + others >= held() + need_of(step.estimate)) break;
      }
    const mold::Bytes working = std::max(step.estimate.bytes, working_floor);
    const mold::Bytes need = working + step.component_bytes;
    // Park others, least recently used first, until the phase fits.
    for (auto it = resident.begin();
         it != resident.end() && available < held() + need;) {
      if (*it == phase.component) {
        ++it;
        continue;
      }
      step.parked.push_back(*it);
      it = resident.erase(it);
    }
    if (available < held() + need) {
      step.fits = false;
      const mold::Bytes can = available > held() ? available - held() : 0;
      step.problem = fmt::format(
          "needs {} ({}working memory {}), at most {} can be made free",
          mold::format_bytes(need),
          step.component_bytes
              ? fmt::format("weights {} + ",
                            mold::format_bytes(step.component_bytes))
              : std::string(),
          mold::format_bytes(working), mold::format_bytes(can));
    }
    if (!phase.component.empty()) {
      resident.erase(
          std::remove(resident.begin(), resident.end(), phase.component),
          resident.end());
      resident.push_back(phase.component);
    }
    step.resident = resident;
    steps.push_back(std::move(step));
  }
  return steps;
}

PlanVerdict judge_plan(
    const std::vector<mold::PlannedPhase>& phases,
    const std::vector<std::shared_ptr<mold::CachedComponent>>& components,
    const DeviceRoom& room, mold::Bytes working_floor,
    const std::function<mold::Estimate(const mold::Workload&)>& estimate) {
  PlanVerdict verdict;
  verdict.room = room;
  auto first_refused = [](const std::vector<PlanStep>& steps) {
    return std::find_if(steps.begin(), steps.end(),
                        [](const PlanStep& s) { return !s.fits; });
  };
  const auto now =
      simulate_plan(phases, components, room.now, working_floor, estimate);
  const auto refused = first_refused(now);
  if (refused == now.end()) return verdict;
  verdict.fits = false;
  verdict.step = *refused;
  if (room.ever > room.now) {
    const auto ever =
        simulate_plan(phases, components, room.ever, working_floor, estimate);
    const auto never = first_refused(ever);
    verdict.never = never != ever.end();
    if (verdict.never) verdict.step = *never;
  } else {
    verdict.never = true;
  }
  verdict.need = std::max(verdict.step.estimate.bytes, working_floor) +
                 verdict.step.component_bytes;
  return verdict;
}

}  // namespace mold_cli
