#pragma once
// mold run --plan: each phase of one image with its estimate, what the model
// cache would hold and park, and whether it fits, without running anything.

#include <functional>
#include <memory>
#include <mold/base/bytes.hpp>
#include <mold/cache/cache.hpp>
#include <mold/estimate/estimate.hpp>
#include <mold/runtime/pipeline.hpp>
#include <string>
#include <vector>

namespace mold_cli {

/// The room a model's work can have on a device: `now`, and `ever` (with
/// every other process gone). `own` is what the model's own resident
/// components hold (the cache can park them).
struct DeviceRoom {
  mold::Bytes now = 0;   ///< free + the allocator's unused cache + `own`
  mold::Bytes ever = 0;  ///< total - what this process holds besides `own`
};
DeviceRoom room_on_device(const mold::MemoryStats& stats, mold::Bytes own);

struct PlanStep {
  mold::PlannedPhase phase;
  mold::Estimate estimate;
  mold::Bytes component_bytes = 0;    ///< its weights, when not yet resident
  mold::Bytes free_before = 0;        ///< free when the phase comes
  std::vector<std::string> parked;    ///< parked to make room
  std::vector<std::string> resident;  ///< resident while it runs
  bool fits = true;
  /// Why not: "needs 3.1 GiB, at most 2.0 GiB can be made free".
  std::string problem;
  /// How it runs when not as planned: "bounded: the whole needs 36.2 GiB".
  std::string note;
};

/// The cache's decisions for one image from a cold start (nothing resident):
/// before each phase its component is loaded and its estimate made free,
/// parking the least recently used others first (the cache's LRU policy).
/// A phase's own estimate (PlannedPhase::estimate) wins over `estimate`.
std::vector<PlanStep> simulate_plan(
    const std::vector<mold::PlannedPhase>& phases,
    const std::vector<std::shared_ptr<mold::CachedComponent>>& components,
    mold::Bytes available, mold::Bytes working_floor,
    const std::function<mold::Estimate(const mold::Workload&)>& estimate);

/// Whether one image's plan fits a device: now, or never (not even with
/// every other process gone).
struct PlanVerdict {
  bool fits = true;
  bool never = false;
  /// The phase that does not fit (with room.ever when never, else with
  /// room.now).
  PlanStep step;
  DeviceRoom room;
  mold::Bytes need = 0;  ///< the step's working memory and weights
};

/// simulate_plan() with room.now and, where a phase does not fit, with
/// room.ever.
PlanVerdict judge_plan(
    const std::vector<mold::PlannedPhase>& phases,
    const std::vector<std::shared_ptr<mold::CachedComponent>>& components,
    const DeviceRoom& room, mold::Bytes working_floor,
    const std::function<mold::Estimate(const mold::Workload&)>& estimate);

}  // namespace mold_cli
