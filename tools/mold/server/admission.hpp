#pragma once
// Admission: whether a job's plan can run on this server at all, before it
// runs. The most room the model's work could have is what is free plus what
// its own resident components hold (the other models are parked by then);
// a phase whose estimate does not fit it refuses the job with the phase and
// the numbers (INSUFFICIENT_MEMORY), so that nothing is loaded for a job that
// would fail half way.

#include <optional>
#include <string>

#include "api_failure.hpp"
#include "model_pool.hpp"

namespace mold_cli {

/// Where the server runs, for the refusal's message.
struct ServerDevice {
  std::string backend;  ///< "cpu", "cuda"
  std::string device;   ///< the backend's device name
};

/// The refusal of `resolved` (batch 1) on `entry`, or
/// nothing when every phase fits. The estimates learn from `history` (may
/// be null).
std::optional<ApiFailure> admit(
    ModelEntry& entry, const mold::ResolvedRequest& resolved,
    const mold::tools::Host& host, const ServerDevice& where,
    const std::shared_ptr<mold::MeasuredHistory>& history);

}  // namespace mold_cli
