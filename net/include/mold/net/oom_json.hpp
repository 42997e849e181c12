#pragma once
/// An out-of-memory report on the wire: the server sends what its classifier
/// made of the error (numbers, the cleaned message, the label and hints as
/// the server words them); the client reads it back and labels it by where it
/// happened (remote: this server), never by the client's own platform.

#include <mold/oom/oom.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mold::net {

/// {"backend", "device", "classifier", "requested", "capacity", "limit",
/// "free", "allocated", "reserved_unallocated", "process_in_use",
/// "other_processes", "other_allocations", "pool", "fragmentation",
/// "message", "raw_message", "exception_kind", "origin": {kind, host,
/// backend, device_name}, "label", "hints"}; absent numbers left out.
nlohmann::json oom_json(const OomReport& report, const std::string& label,
                        const std::vector<std::string>& hints,
                        const std::string& exception_kind);

/// The report oom_json wrote, and its hints. Throws ParseError naming the
/// field for anything malformed (a number that is not a byte count, ...).
struct ReceivedOom {
  OomReport report;
  std::vector<std::string> hints;
  std::string label;  ///< the server's own wording
  std::string exception_kind;
};
ReceivedOom oom_from_json(const nlohmann::json& json);

}  // namespace mold::net
