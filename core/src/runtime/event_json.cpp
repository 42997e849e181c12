#include "mold/runtime/event_json.hpp"

#include <fmt/format.h>

#include <limits>

#include "event_json_detail.hpp"
#include "mold/base/error.hpp"
#include "mold/base/untrusted_json.hpp"

namespace mold {

using Json = nlohmann::json;

namespace detail {

Json memory_json(const MemoryStats& stats) {
  Json out = Json::object();
  for (const auto& field : kMemoryStatsFields)
    out[field.name] = stats.*field.member;
  return out;
}

Json residency_json(const std::vector<CacheEntryState>& entries) {
  Json out = Json::array();
  for (const auto& entry : entries)
    out.push_back({{"component", entry.name},
                   {"residency", std::string(to_string(entry.residency))},
                   {"bytes", entry.bytes},
                   {"loads", entry.loads},
                   {"load_seconds", entry.load_seconds}});
  return out;
}

Json phase_event_object(const PhaseEvent& e) {
  Json phase = {{"image", e.image},
                {"images", e.images},
                {"phase", e.phase},
                {"component", e.component},
                {"status", std::string(to_string(e.stage))},
                {"seconds", e.seconds},
                {"load_seconds", e.load_seconds},
                {"step", e.step},
                {"steps", e.steps},
                {"workload", workload_object(e.workload)},
                {"estimate_bytes", e.estimate.bytes},
                {"estimate_source", e.estimate.source},
                {"estimate_origin", e.estimate.origin},
                {"before", memory_json(e.before)},
                {"after", memory_json(e.after)},
                {"parked", e.parked},
                {"residency", residency_json(e.residency)}};
  if (!e.detail.empty()) phase["detail"] = e.detail;
  if (!e.error.empty()) phase["error"] = e.error;
  return phase;
}

}  // namespace detail

Json workload_object(const Workload& w) {
  Json out = {{"family", w.family},   {"model", w.model},
              {"op", w.op},           {"backend", w.backend},
              {"dtype", w.dtype},     {"arch", w.arch},
              {"batch", w.batch},     {"width", w.width},
              {"height", w.height},   {"tokens", w.tokens},
              {"threads", w.threads}, {"quantized", w.quantized}};
  if (w.frames != 1) out["frames"] = w.frames;
  if (w.tile != 0) out["tile"] = w.tile;
  if (w.attention_bound != 0) out["attention_bound"] = w.attention_bound;
  if (!w.images.empty()) {
    Json images = Json::array();
    for (const ImageSize& image : w.images)
      images.push_back({{"width", image.width}, {"height", image.height}});
    out["images"] = std::move(images);
  }
  return out;
}

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw ParseError(fmt::format("phase event: {} {}", where, what));
}

const Json& member(const Json& object, const char* key,
                   const std::string& where) {
  if (!object.is_object()) bad(where, "should be an object");
  const auto it = object.find(key);
  if (it == object.end())
    bad(where.empty() ? key : where + "." + key, "is missing");
  return *it;
}

std::string string_field(const Json& object, const char* key,
                         const std::string& where, bool required = true) {
  if (!required && (!object.is_object() || !object.contains(key))) return {};
  const Json& value = member(object, key, where);
  if (!value.is_string())
    bad(where.empty() ? key : where + "." + key, "should be a string");
  return value.get<std::string>();
}

/// An optional duration: a number >= 0; 0 when absent.
double seconds_field(const Json& object, const char* key,
                     const std::string& where) {
  if (!object.is_object() || !object.contains(key)) return 0;
  const Json& value = object[key];
  const std::string name = where.empty() ? key : where + "." + key;
  if (!value.is_number()) bad(name, "should be a number");
  const double seconds = value.get<double>();
  if (!(seconds >= 0)) bad(name, "should not be negative");
  return seconds;
}

template <class Int>
Int int_field(const Json& object, const char* key, const std::string& where,
              bool required = true) {
  if (!required && (!object.is_object() || !object.contains(key))) return 0;
  const Json& value = member(object, key, where);
  const std::string name = where.empty() ? key : where + "." + key;
  if (!value.is_number_integer()) bad(name, "should be an integer");
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > std::uint64_t(std::numeric_limits<Int>::max()))
      bad(name, fmt::format("is out of range ({})", v));
    return Int(v);
  }
  const auto v = value.get<std::int64_t>();
  // Every count of an event (image, step, bytes, ...) is 0 or more.
  if (v < 0) bad(name, fmt::format("should not be negative ({})", v));
  if (v < std::int64_t(std::numeric_limits<Int>::min()) ||
      (v > 0 &&
       std::uint64_t(v) > std::uint64_t(std::numeric_limits<Int>::max())))
    bad(name, fmt::format("is out of range ({})", v));
  return Int(v);
}

MemoryStats memory_from(const Json& object, const std::string& where) {
  MemoryStats stats;
  if (!object.is_object()) bad(where, "should be an object");
  for (const auto& field : kMemoryStatsFields)
    stats.*field.member =
        int_field<std::uint64_t>(object, field.name, where, false);
  return stats;
}

PhaseStage stage_from(const std::string& text) {
  for (const PhaseStage stage :
       {PhaseStage::start, PhaseStage::step, PhaseStage::done,
        PhaseStage::failed, PhaseStage::reused})
    if (text == to_string(stage)) return stage;
  bad("status",
      fmt::format("\"{}\" is not one of start, step, done, failed, reused",
                  text));
}

Residency residency_from(const std::string& text, const std::string& where) {
  for (const Residency r :
       {Residency::device, Residency::parked, Residency::unloaded})
    if (text == to_string(r)) return r;
  bad(where,
      fmt::format("\"{}\" is not one of device, parked, unloaded", text));
}

}  // namespace

std::string phase_event_json(const PhaseEvent& event) {
  return detail::phase_event_object(event).dump();
}

std::string memory_stats_json(const MemoryStats& stats) {
  return detail::memory_json(stats).dump();
}

Workload parse_workload_object(const Json& w) {
  if (!w.is_object()) bad("workload", "should be an object");
  Workload out;
  out.family = string_field(w, "family", "workload", false);
  out.model = string_field(w, "model", "workload", false);
  out.op = string_field(w, "op", "workload", false);
  out.backend = string_field(w, "backend", "workload", false);
  if (w.contains("dtype")) out.dtype = string_field(w, "dtype", "workload");
  if (w.contains("arch")) out.arch = string_field(w, "arch", "workload");
  out.batch = int_field<int>(w, "batch", "workload", false);
  out.width = int_field<int>(w, "width", "workload", false);
  out.height = int_field<int>(w, "height", "workload", false);
  out.tokens = int_field<int>(w, "tokens", "workload", false);
  if (w.contains("threads")) {
    out.threads = int_field<int>(w, "threads", "workload");
    if (out.threads < 1 || out.threads > kMaxThreads)
      bad("workload.threads", fmt::format("is {}: it must be from 1 to {}",
                                          out.threads, kMaxThreads));
  }
  if (w.contains("quantized")) {
    if (!w["quantized"].is_boolean())
      bad("workload.quantized", "should be true or false");
    out.quantized = w["quantized"].get<bool>();
  }
  if (w.contains("frames")) {
    out.frames = int_field<int>(w, "frames", "workload");
    if (out.frames < 1 || out.frames > kMaxFrames)
      bad("workload.frames", fmt::format("is {}: it must be from 1 to {}",
                                         out.frames, kMaxFrames));
  }
  out.tile = int_field<int>(w, "tile", "workload", false);
  out.attention_bound =
      int_field<std::uint64_t>(w, "attention_bound", "workload", false);
  if (w.contains("images")) {
    const Json& images = w["images"];
    if (!images.is_array() || images.size() > std::size_t(kMaxInputImages))
      bad("workload.images",
          fmt::format("should be an array of at most {} {{width, height}} "
                      "objects",
                      kMaxInputImages));
    for (const Json& image : images)
      out.images.push_back(
          {int_field<int>(image, "width", "workload.images"),
           int_field<int>(image, "height", "workload.images")});
  }
  return out;
}

PhaseEvent parse_phase_event_json(std::string_view text) {
  const Json j = mold::parse_untrusted_json(text);
  if (j.is_discarded()) bad("text", "is not JSON");
  if (!j.is_object()) bad("text", "should be a JSON object");
  PhaseEvent e;
  e.image = int_field<int>(j, "image", "");
  e.images = int_field<int>(j, "images", "", false);
  if (e.images < 1) e.images = 1;
  e.phase = string_field(j, "phase", "");
  e.component = string_field(j, "component", "", false);
  e.stage = stage_from(string_field(j, "status", ""));
  e.step = int_field<int>(j, "step", "", false);
  e.steps = int_field<int>(j, "steps", "", false);
  e.seconds = seconds_field(j, "seconds", "");
  e.load_seconds = seconds_field(j, "load_seconds", "");
  if (j.contains("workload")) e.workload = parse_workload_object(j["workload"]);
  e.estimate.bytes = int_field<Bytes>(j, "estimate_bytes", "", false);
  e.estimate.source = string_field(j, "estimate_source", "", false);
  if (j.contains("estimate_origin"))
    e.estimate.origin = string_field(j, "estimate_origin", "");
  if (j.contains("before")) e.before = memory_from(j["before"], "before");
  if (j.contains("after")) e.after = memory_from(j["after"], "after");
  if (j.contains("parked")) {
    const Json& parked = j["parked"];
    if (!parked.is_array()) bad("parked", "should be an array of names");
    for (std::size_t i = 0; i < parked.size(); ++i) {
      if (!parked[i].is_string())
        bad(fmt::format("parked[{}]", i), "should be a string");
      e.parked.push_back(parked[i].get<std::string>());
    }
  }
  if (j.contains("residency")) {
    const Json& residency = j["residency"];
    if (!residency.is_array()) bad("residency", "should be an array");
    for (std::size_t i = 0; i < residency.size(); ++i) {
      const std::string where = fmt::format("residency[{}]", i);
      CacheEntryState entry;
      entry.name = string_field(residency[i], "component", where);
      entry.residency = residency_from(
          string_field(residency[i], "residency", where), where + ".residency");
      entry.bytes = int_field<Bytes>(residency[i], "bytes", where, false);
      entry.loads =
          int_field<std::uint64_t>(residency[i], "loads", where, false);
      entry.load_seconds = seconds_field(residency[i], "load_seconds", where);
      e.residency.push_back(std::move(entry));
    }
  }
  e.detail = string_field(j, "detail", "", false);
  e.error = string_field(j, "error", "", false);
  return e;
}

}  // namespace mold
