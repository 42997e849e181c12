#pragma once
// The JSON views of mold serve's state (docs/http-api.md): GET /api/status,
// /api/memory and /api/models, made from snapshots the service takes.

#include <mold/base/memory_stats.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "admission.hpp"
#include "job_queue.hpp"

namespace mold_cli {

/// The job on the device, if any.
struct CurrentJob {
  std::string request_id;  ///< empty: none
  std::string model;       ///< its model's key
  std::string phase;       ///< the phase running, empty between phases
};

/// GET /api/status.
nlohmann::json status_view(const ServerDevice& where, double uptime_seconds,
                           const mold::MemoryStats& memory,
                           const nlohmann::json& models,
                           const QueueSnapshot& queue,
                           const CurrentJob& current);

/// GET /api/memory: now, and the last request that ran a phase (null before).
nlohmann::json memory_view(const ServerDevice& where,
                           const mold::MemoryStats& now, bool busy,
                           const nlohmann::json& last_request);

/// GET /api/models: every model the plugins know, with what is loaded of it.
nlohmann::json models_view(const mold::Registry& registry,
                           const nlohmann::json& loaded);

}  // namespace mold_cli
