#include "mold/runtime/pipeline.hpp"

#include <fmt/format.h>

#include <set>

#include "mold/base/error.hpp"
#include "mold/cache/cache.hpp"
#include "mold/oom/oom.hpp"
#include "mold/plan/vae_settings.hpp"
#include "mold/plugin/registry.hpp"
#include "mold/runtime/allocation_scope.hpp"

namespace mold {

PhaseScope::PhaseScope(RunContext& context, const PhaseEvent& start,
                       CachedComponent* component)
    : context_(context),
      start_(start),
      component_(component),
      started_(std::chrono::steady_clock::now()) {}

double PhaseScope::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       started_)
      .count();
}

void PhaseScope::step(int step, int steps) {
  context_.check_cancelled();
  PhaseEvent event;
  event.image = start_.image;
  event.images = start_.images;
  event.phase = start_.phase;
  event.component = start_.component;
  event.stage = PhaseStage::step;
  event.step = step;
  event.steps = steps;
  event.seconds = seconds();
  event.estimate = start_.estimate;
  context_.emit(event);
}

RunContext::RunContext(ModelCache& cache, const Registry& registry,
                       std::vector<RunObserver*> observers)
    : cache_(cache), registry_(registry), observers_(std::move(observers)) {}

void RunContext::begin_image(int image, int images) {
  image_ = image;
  images_ = images;
  AllocationScopes::open(backend(),
                         {image_, "", "", ScopeKind::between_phases});
}

void RunContext::set_cancel(std::function<bool()> cancelled,
                            std::string reason) {
  cancelled_ = std::move(cancelled);
  cancel_reason_ = std::move(reason);
}

void RunContext::check_cancelled() const {
  if (cancelled_ && cancelled_()) throw Cancelled(cancel_reason_);
}

void RunContext::emit(const PhaseEvent& event) {
  for (RunObserver* observer : observers_) observer->on_phase(event);
}

Estimate RunContext::estimate(const Workload& workload) const {
  if (!registry_.find_estimator(workload)) {
    Estimate none;
    none.source = "no estimator";
    none.origin = "none";
    return none;
  }
  const Estimate table = registry_.estimate(workload);
  if (!history_ || !learn_) return table;
  return learned_estimate(
      table, workload, history_->phases_like(workload),
      [this](const Workload& w) { return registry_.estimate(w); },
      history_->device());
}

void RunContext::set_history(std::shared_ptr<MeasuredHistory> history,
                             std::string by, bool learn) {
  history_ = std::move(history);
  recorded_by_ = std::move(by);
  learn_ = learn;
}

void RunContext::record(const PhaseEvent& event, const std::string& error) {
  if (!history_ || event.workload.op.empty()) return;
  try {
    MeasuredPhase phase;
    phase.workload = event.workload;
    phase.by = recorded_by_;
    if (error.empty()) {
      phase.peak = working_peak(event.before, event.after);
    } else {
      ErrorContext context;
      context.message = error;
      context.origin.backend = backend().name();
      context.origin.device_name = history_->device();
      const auto report = registry_.classify(context);
      if (!report || !report->requested) return;
      phase.peak = *report->requested;
      phase.lower_bound = true;
    }
    for (const auto& term : event.estimate.terms) {
      if (term.counted) phase.unfitted += term.bytes;
      if (!term.constant.empty())
        phase.bases.emplace_back(term.constant, term.basis);
    }
    history_->append(std::move(phase));
  } catch (const std::exception&) {  // a history is never a reason to fail
  }
}

void RunContext::reuse_phase(const PlannedPhase& phase, std::string detail) {
  PhaseEvent event;
  event.image = image_;
  event.images = images_;
  event.phase = phase.phase;
  event.component = phase.component;
  event.workload = phase.workload;
  event.stage = PhaseStage::reused;
  event.steps = phase.steps;
  event.estimate.source = "reused: nothing runs";
  event.before = event.after = backend().stats();
  event.residency = cache_.entries();
  event.detail = std::move(detail);
  emit(event);
}

void RunContext::run_phase(const PlannedPhase& phase,
                           const std::function<void(PhaseScope&)>& body) {
  check_cancelled();
  PhaseEvent event;
  event.image = image_;
  event.images = images_;
  event.phase = phase.phase;
  event.component = phase.component;
  event.workload = phase.workload;
  event.steps = phase.steps;
  event.estimate = phase.estimate ? *phase.estimate : estimate(phase.workload);

  std::set<std::string> resident_before;
  std::uint64_t loads_before = 0;
  for (const auto& entry : cache_.entries()) {
    if (entry.residency == Residency::device)
      resident_before.insert(entry.name);
    if (entry.name == phase.component) loads_before = entry.loads;
  }
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         started)
        .count();
  };
  auto fail = [&](const std::string& message) {
    PhaseEvent failed = event;
    failed.stage = PhaseStage::failed;
    failed.seconds = elapsed();
    failed.error = message;
    failed.after = backend().stats();
    failed.residency = cache_.entries();
    record(failed, message);
    emit(failed);
  };

  auto open_scope = [&](ScopeKind kind) {
    const bool between = kind == ScopeKind::between_phases;
    AllocationScopes::open(backend(), {image_, between ? "" : phase.phase,
                                       between ? "" : phase.component, kind});
  };
  // Whatever happens, later allocations are the pipeline's own again.
  struct ScopeGuard {
    std::function<void()> end;
    ~ScopeGuard() {
      try {
        end();
      } catch (...) {  // no scope is no reason to lose the phase's outcome
      }
    }
  } between{[&] { open_scope(ScopeKind::between_phases); }};
  open_scope(ScopeKind::load);

  ModelCache::Lease lease;
  auto acquire = [&] {
    return phase.component.empty()
               ? cache_.reserve(event.estimate.bytes)
               : cache_.acquire(phase.component, event.estimate.bytes);
  };
  try {
    try {
      lease = acquire();
    } catch (const InsufficientMemory&) {
      // A VAE phase with no room for the whole asks for the memory of the
      // ladder's first rung that fits (bounded, then tiles), which the ladder,
      // predicting from the same estimates, then runs.
      const std::vector<Workload> rungs =
          phase.estimate ? std::vector<Workload>{}
                         : vae_fallback_workloads(phase.workload);
      if (rungs.empty()) throw;
      for (std::size_t i = 0;; ++i) {
        event.workload = rungs[i];
        event.estimate = estimate(rungs[i]);
        try {
          lease = acquire();
          break;
        } catch (const InsufficientMemory&) {
          if (i + 1 == rungs.size()) throw;
        }
      }
    }
  } catch (const std::exception& e) {
    fail(e.what());
    throw;
  }
  event.residency = cache_.entries();
  for (const auto& entry : event.residency) {
    if (resident_before.count(entry.name) &&
        entry.residency != Residency::device)
      event.parked.push_back(entry.name);
    if (entry.name == phase.component && entry.loads > loads_before)
      event.load_seconds = entry.load_seconds;
  }
  open_scope(ScopeKind::phase);
  backend().reset_peak();
  event.before = backend().stats();
  event.stage = PhaseStage::start;
  emit(event);

  PhaseScope scope(*this, event, lease.component());
  try {
    body(scope);
    backend().synchronize_and_check();
  } catch (const std::exception& e) {
    fail(e.what());
    throw;
  }
  PhaseEvent done = event;
  done.stage = PhaseStage::done;
  done.seconds = elapsed();
  done.after = backend().stats();
  done.residency = cache_.entries();
  done.detail = scope.detail_;
  done.step = phase.steps;
  record(done, {});
  emit(done);
}

}  // namespace mold
