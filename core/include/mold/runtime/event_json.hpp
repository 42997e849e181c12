#pragma once
/// The runtime's events as JSON text: what `mold run --json` records and what
/// `mold serve` streams to clients (docs/http-api.md, "progress"), and the way
/// back for a client that prints a server's events as its own progress lines.
/// Torch-free.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "mold/base/memory_stats.hpp"
#include "mold/runtime/phase_event.hpp"

namespace mold {

/// One JSON object: image, images, phase, component, status (start, step,
/// done, failed), step, steps, seconds, workload, estimate_bytes,
/// estimate_source, estimate_origin, before, after, parked, residency,
/// detail, error.
std::string phase_event_json(const PhaseEvent& event);

/// The event `phase_event_json` wrote (fields it leaves out keep their
/// defaults; the estimate's terms are not carried). Throws ParseError naming
/// the field and what it should be for anything else: not JSON, a missing
/// field, a wrong type, a number out of range, an unknown status.
PhaseEvent parse_phase_event_json(std::string_view text);

/// The "workload" object of an event: family, model, op, backend, dtype,
/// arch, batch, width, height, tokens, threads, quantized and, for an edit,
/// images ({width, height} each); frames and tile where they are not 1 and 0.
/// `mold run --plan --json` writes it too.
nlohmann::json workload_object(const Workload& workload);
/// The workload `workload_object` wrote (absent fields keep their
/// defaults). Throws ParseError naming the field for a wrong type or a
/// number out of range; the caller validates the whole.
Workload parse_workload_object(const nlohmann::json& object);

/// {"total": ..., "free": ..., ...}: every field of kMemoryStatsFields.
std::string memory_stats_json(const MemoryStats& stats);

}  // namespace mold
