#include "mold/net/oom_json.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

namespace mold::net {

using Json = nlohmann::json;

namespace {

struct ByteField {
  const char* name;
  std::optional<Bytes> OomReport::*member;
};
constexpr ByteField kByteFields[] = {
    {"requested", &OomReport::requested},
    {"capacity", &OomReport::capacity},
    {"limit", &OomReport::limit},
    {"free", &OomReport::free},
    {"allocated", &OomReport::allocated},
    {"reserved_unallocated", &OomReport::reserved_unallocated},
    {"process_in_use", &OomReport::process_in_use},
    {"other_processes", &OomReport::other_processes},
    {"other_allocations", &OomReport::other_allocations},
};

[[noreturn]] void bad(const std::string& field, const char* what) {
  throw ParseError(fmt::format("the server's oom report: {} {}", field, what));
}

std::string text(const Json& j, const char* key,
                 const std::string& where = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) bad(where + key, "should be a string");
  return it->get<std::string>();
}

}  // namespace

Json oom_json(const OomReport& r, const std::string& label,
              const std::vector<std::string>& hints,
              const std::string& exception_kind) {
  Json out = {
      {"backend", r.backend},
      {"device", r.device},
      {"classifier", r.classifier},
      {"pool", r.pool},
      {"fragmentation", r.fragmentation},
      {"message", r.message},
      {"raw_message", r.raw_message},
      {"exception_kind", exception_kind},
      {"origin",
       {{"kind", r.origin.kind == Origin::Kind::remote ? "remote" : "local"},
        {"host", r.origin.host},
        {"backend", r.origin.backend},
        {"device_name", r.origin.device_name}}},
      {"label", label},
      {"hints", hints}};
  for (const auto& field : kByteFields)
    if (const auto& value = r.*field.member) out[field.name] = *value;
  return out;
}

ReceivedOom oom_from_json(const Json& j) {
  if (!j.is_object()) bad("oom", "should be an object");
  ReceivedOom out;
  OomReport& r = out.report;
  r.backend = text(j, "backend");
  if (r.backend.empty()) r.backend = "unknown";
  r.device = text(j, "device");
  r.classifier = text(j, "classifier");
  r.pool = text(j, "pool");
  r.message = text(j, "message");
  r.raw_message = text(j, "raw_message");
  out.exception_kind = text(j, "exception_kind");
  out.label = text(j, "label");
  if (j.contains("fragmentation")) {
    if (!j["fragmentation"].is_boolean())
      bad("fragmentation", "should be true or false");
    r.fragmentation = j["fragmentation"].get<bool>();
  }
  for (const auto& field : kByteFields) {
    const auto it = j.find(field.name);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number_unsigned() &&
        !(it->is_number_integer() && it->get<std::int64_t>() >= 0))
      bad(field.name, "should be a byte count (a whole number, 0 or more)");
    r.*field.member = it->get<Bytes>();
  }
  if (j.contains("origin")) {
    const Json& o = j["origin"];
    if (!o.is_object()) bad("origin", "should be an object");
    r.origin.kind = text(o, "kind", "origin.") == "remote"
                        ? Origin::Kind::remote
                        : Origin::Kind::local;
    r.origin.host = text(o, "host", "origin.");
    r.origin.backend = text(o, "backend", "origin.");
    r.origin.device_name = text(o, "device_name", "origin.");
  }
  if (j.contains("hints")) {
    const Json& h = j["hints"];
    if (!h.is_array()) bad("hints", "should be an array of strings");
    for (const auto& hint : h) {
      if (!hint.is_string()) bad("hints[]", "should be a string");
      out.hints.push_back(hint.get<std::string>());
    }
  }
  return out;
}

}  // namespace mold::net
