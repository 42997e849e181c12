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

}  // namespace mold_cli
