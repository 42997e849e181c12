#pragma once
// The JSON objects behind mold/runtime/event_json.hpp, for the runtime's own
// writers (the JSON recorder) that build larger documents.

#include <nlohmann/json.hpp>

#include "mold/base/memory_stats.hpp"
#include "mold/cache/cache.hpp"
#include "mold/runtime/phase_event.hpp"

namespace mold::detail {

nlohmann::json memory_json(const MemoryStats& stats);
nlohmann::json residency_json(const std::vector<CacheEntryState>& entries);
nlohmann::json phase_event_object(const PhaseEvent& event);

}  // namespace mold::detail
