#include "mold/profile/profile_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "mold/base/bytes.hpp"
#include "mold/base/error.hpp"
#include "mold/base/text.hpp"

namespace mold {

namespace {

using Json = nlohmann::ordered_json;

/// A field's value for a message, never longer than 60 characters: a nested
/// value by its kind and size, a string cut with "...", a scalar as written.
std::string shown(const Json& value) {
  if (value.is_object())
    return fmt::format("an object of {} keys", value.size());
  if (value.is_array())
    return fmt::format("an array of {} values", value.size());
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Json residency_json(const std::vector<CacheEntryState>& entries) {
  Json out = Json::array();
  for (const auto& e : entries) {
    Json item = {{"component", e.name},
                 {"residency", std::string(to_string(e.residency))},
                 {"bytes", e.bytes},
                 {"loads", e.loads},
                 {"load_seconds", e.load_seconds}};
    item["released_on_park"] =
        e.released_on_park ? Json(*e.released_on_park) : Json(nullptr);
    out.push_back(std::move(item));
  }
  return out;
}

Json series_json(const SeriesVerdict& v) {
  return {{"shape", to_string(v.shape)},
          {"warmup", v.warmup},
          {"values", v.values},
          {"slope", v.trend.slope},
          {"slope_low", v.slope_low},
          {"slope_high", v.slope_high},
          {"r_squared", v.trend.r_squared},
          {"noise", v.noise},
          {"autocorrelation", v.autocorrelation},
          {"step_mean", v.step_mean},
          {"step_spread", v.step_spread},
          {"min_step", v.trend.min_step},
          {"threshold", v.threshold},
          {"slope_threshold", v.slope_threshold},
          {"rises_every_image", v.rises_every_image},
          {"sloped", v.sloped},
          {"grows", v.grows()},
          {"grew", v.grew},
          {"grew_images", v.grew_to - v.grew_from},
          {"flat_images", v.flat_images},
          {"live_images", v.live_images},
          {"images_needed", v.images_needed},
          {"reason", v.reason}};
}

}  // namespace

std::string profile_json(const MemoryProfile& p, const LeakReport* leak,
                         const ParityReport* parity) {
  Json out = {{"schema", kProfileSchema},
              {"driver", p.driver},
              {"subject", p.subject},
              {"backend", p.backend},
              {"device", p.device}};
  Json images = Json::array();
  for (const auto& img : p.images)
    images.push_back({{"image", img.image},
                      {"seed", img.seed},
                      {"seconds", img.seconds},
                      {"allocated", img.after.allocated},
                      {"reserved", img.after.reserved},
                      {"peak_allocated", img.after.peak_allocated},
                      {"host_rss", img.after.host_rss},
                      {"device_used", img.after.device_used},
                      {"inactive_split", img.after.inactive_split},
                      {"alloc_retries", img.after.alloc_retries},
                      {"ooms", img.after.ooms},
                      {"residency", residency_json(img.residency)}});
  out["images"] = std::move(images);
  Json phases = Json::array();
  for (const auto& ph : p.phases)
    phases.push_back(
        {{"image", ph.image},
         {"phase", ph.phase},
         {"component", ph.component},
         {"seconds", ph.seconds},
         {"estimate", ph.estimate},
         {"before_allocated", ph.before.allocated},
         {"after_allocated", ph.after.allocated},
         {"after_reserved", ph.after.reserved},
         {"peak_allocated", ph.after.peak_allocated},
         {"working_peak", ph.working_peak()},
         {"unaccounted_peak", ph.unaccounted_peak()},
         {"host_rss", ph.after.host_rss},
         {"resident_weights", ph.after.peak_allocated - ph.unaccounted_peak()},
         {"parked", ph.parked}});
  out["phases"] = std::move(phases);
  // What is still live per scope at the end of the last image (earlier
  // images' lists are contained in it).
  if (!p.images.empty() && p.images.back().attributed) {
    Json residue = Json::array();
    for (const auto& r : p.images.back().residue)
      residue.push_back({{"image", r.image},
                         {"phase", r.phase},
                         {"component", r.component},
                         {"kind", r.kind},
                         {"bytes", r.bytes}});
    out["residue_at_end"] = std::move(residue);
  } else {
    out["residue_at_end"] = nullptr;
  }
  if (leak) {
    Json attributions = Json::array();
    for (const auto& a : leak->attributions)
      attributions.push_back({{"phase", a.phase},
                              {"component", a.component},
                              {"bytes_per_image", a.bytes_per_image},
                              {"images", a.images},
                              {"persistent", a.persistent},
                              {"since_first_image", a.since_first_image},
                              {"exact", a.exact},
                              {"detail", a.detail}});
    Json parked = Json::array();
    for (const auto& h : leak->parked_holding)
      parked.push_back({{"component", h.component},
                        {"bytes", h.bytes},
                        {"held", h.held},
                        {"exact", h.exact}});
    out["leak"] = {{"verdict", to_string(leak->verdict)},
                   {"summary", leak->summary},
                   {"images", leak->images},
                   {"warmup", leak->warmup},
                   {"images_needed", leak->images_needed},
                   {"host_only", leak->host_only},
                   {"caching", leak->caching},
                   {"series",
                    {{"allocated", series_json(leak->allocated)},
                     {"reserved", series_json(leak->reserved)},
                     {"host_rss", series_json(leak->host)}}},
                   {"attributions", attributions},
                   {"parked_holding", parked}};
  }
  if (parity) {
    Json rows = Json::array();
    for (const auto& row : parity->phases)
      rows.push_back({{"phase", row.phase},
                      {"occurrence", row.occurrence},
                      {"first", row.first},
                      {"allowed", row.allowed},
                      {"worst", row.worst},
                      {"worst_image", row.worst_image},
                      {"first_raw_peak", row.first_raw_peak},
                      {"worst_raw_peak", row.worst_raw_peak},
                      {"first_working", row.first_working},
                      {"allowed_working", row.allowed_working},
                      {"worst_working", row.worst_working},
                      {"worst_working_image", row.worst_working_image},
                      {"carried_in", row.carried_in},
                      {"carried", row.carried},
                      {"carried_by", row.carried_by},
                      {"carried_by_image", row.carried_by_image},
                      {"carried_since_image", row.carried_since_image},
                      {"carried_exact", row.carried_exact},
                      {"ok", row.ok}});
    out["parity"] = {{"ok", parity->ok},
                     {"verdict", !parity->ok       ? "broken"
                                 : parity->carried ? "carried"
                                                   : "holds"},
                     {"carried", parity->carried},
                     {"summary", parity->summary},
                     {"images", parity->images},
                     {"phases", rows}};
  }
  return out.dump(2, ' ', false, Json::error_handler_t::replace);
}

namespace {

/// A field of `j` (an object) as T; ParseError naming it otherwise. Numbers
/// are taken only where T holds them exactly: whole numbers from 0 to T's
/// largest (a negative count or 1e308 is refused, never wrapped), and
/// seconds finite and >= 0.
template <class T> constexpr std::uint64_t largest_of() {
  if constexpr (std::is_integral_v<T>)
    return std::uint64_t(std::numeric_limits<T>::max());
  else
    return 0;  // unused: not a whole number
}

template <class T>
T field(const Json& j, const char* key, const std::string& where,
        std::uint64_t largest = largest_of<T>()) {
  const auto it = j.find(key);
  if (it == j.end())
    throw ParseError(fmt::format("{}: '{}' is missing", where, key));
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string())
      throw ParseError(fmt::format("{}: '{}' is not a string", where, key));
    return it->get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) ||
        it->get<double>() < 0)
      throw ParseError(fmt::format("{}: '{}' is {}, not a number >= 0", where,
                                   key, shown(*it)));
    return it->get<T>();
  } else {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > largest)
      throw ParseError(
          fmt::format("{}: '{}' is {}, not a whole number from 0 to {}", where,
                      key, shown(*it), largest));
    return T(it->get<std::uint64_t>());
  }
}

/// A byte count: a whole number from 0 to kMaxBytes.
Bytes bytes_field(const Json& j, const char* key, const std::string& where) {
  return field<Bytes>(j, key, where, kMaxBytes);
}

/// An optional field (absent or null: `fallback`), as field().
template <class T>
T optional_field(const Json& j, const char* key, const std::string& where,
                 T fallback, std::uint64_t largest = largest_of<T>()) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return field<T>(j, key, where, largest);
}

Residency residency_from(const std::string& text, const std::string& where) {
  if (text == "device") return Residency::device;
  if (text == "parked") return Residency::parked;
  if (text == "unloaded") return Residency::unloaded;
  throw ParseError(fmt::format(
      "{}: residency '{}' is none of device, parked, unloaded", where, text));
}

std::vector<CacheEntryState> residency_from_json(const Json& list,
                                                 const std::string& where) {
  std::vector<CacheEntryState> out;
  if (!list.is_array()) throw ParseError(where + ": 'residency' is not a list");
  for (const auto& item : list) {
    CacheEntryState e;
    e.name = field<std::string>(item, "component", where);
    e.residency =
        residency_from(field<std::string>(item, "residency", where), where);
    e.bytes = bytes_field(item, "bytes", where);
    e.loads = field<std::uint64_t>(item, "loads", where);
    // Reports written before mold measured load times have none.
    const auto load = item.find("load_seconds");
    if (load != item.end()) {
      if (!load->is_number() || !(load->get<double>() >= 0))
        throw ParseError(where +
                         ": 'load_seconds' is not a number of seconds >= 0");
      e.load_seconds = load->get<double>();
    }
    if (item.contains("released_on_park") &&
        !item.at("released_on_park").is_null())
      e.released_on_park = bytes_field(item, "released_on_park", where);
    out.push_back(std::move(e));
  }
  return out;
}

MemoryProfile profile_from(const Json& j);

}  // namespace

MemoryProfile profile_from_json(const std::string& text) {
  if (const std::size_t depth = json_nesting_depth(text);
      depth > kMaxJsonNesting)
    throw ParseError(fmt::format(
        "not a report: it nests arrays and objects {} deep (a report nests "
        "4)",
        depth));
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ParseError(std::string("not a JSON report: ") + e.what());
  }
  if (!j.is_object() || !j.contains("schema"))
    throw ParseError(
        "not a mold memory report: no 'schema' field (molddiag leak --report "
        "writes one)");
  const int schema = field<int>(j, "schema", "the report");
  if (schema != kProfileSchema)
    throw ParseError(
        fmt::format("the report's schema is {}; this molddiag reads schema {}",
                    schema, kProfileSchema));
  try {
    return profile_from(j);
  } catch (const nlohmann::json::exception& e) {
    throw ParseError(std::string("a malformed report: ") + e.what());
  }
}

namespace {

MemoryProfile profile_from(const Json& j) {
  MemoryProfile p;
  p.driver = field<std::string>(j, "driver", "the report");
  p.subject = field<std::string>(j, "subject", "the report");
  p.backend = field<std::string>(j, "backend", "the report");
  p.device = field<std::string>(j, "device", "the report");
  const Json images = j.value("images", Json::array());
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Json& item = images[i];
    const std::string where = fmt::format("images[{}]", i);
    ImageSample s;
    s.image = field<int>(item, "image", where);
    s.seed = field<std::uint64_t>(item, "seed", where);
    s.seconds = field<double>(item, "seconds", where);
    s.after.allocated = bytes_field(item, "allocated", where);
    s.after.reserved = bytes_field(item, "reserved", where);
    s.after.peak_allocated = bytes_field(item, "peak_allocated", where);
    s.after.host_rss = bytes_field(item, "host_rss", where);
    s.after.device_used =
        optional_field<Bytes>(item, "device_used", where, 0, kMaxBytes);
    s.after.inactive_split =
        optional_field<Bytes>(item, "inactive_split", where, 0, kMaxBytes);
    s.after.alloc_retries =
        optional_field<std::uint64_t>(item, "alloc_retries", where, 0);
    s.after.ooms = optional_field<std::uint64_t>(item, "ooms", where, 0);
    s.residency =
        residency_from_json(item.value("residency", Json::array()), where);
    p.images.push_back(std::move(s));
  }
  const Json phases = j.value("phases", Json::array());
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const Json& item = phases[i];
    const std::string where = fmt::format("phases[{}]", i);
    PhaseSample s;
    s.image = field<int>(item, "image", where);
    s.phase = field<std::string>(item, "phase", where);
    s.component = field<std::string>(item, "component", where);
    s.seconds = field<double>(item, "seconds", where);
    s.estimate = bytes_field(item, "estimate", where);
    s.before.allocated = bytes_field(item, "before_allocated", where);
    s.after.allocated = bytes_field(item, "after_allocated", where);
    s.after.reserved = bytes_field(item, "after_reserved", where);
    s.after.peak_allocated = bytes_field(item, "peak_allocated", where);
    s.after.host_rss = bytes_field(item, "host_rss", where);
    s.parked = item.value("parked", std::vector<std::string>{});
    // What the cache accounted for during it, as one entry.
    CacheEntryState weights;
    weights.name = "(resident weights)";
    weights.residency = Residency::device;
    weights.bytes = bytes_field(item, "resident_weights", where);
    s.residency = {weights};
    p.phases.push_back(std::move(s));
  }
  const auto residue = j.find("residue_at_end");
  if (residue != j.end() && residue->is_array() && !p.images.empty()) {
    ImageSample& last = p.images.back();
    last.attributed = true;
    for (std::size_t i = 0; i < residue->size(); ++i) {
      const Json& item = (*residue)[i];
      const std::string where = fmt::format("residue_at_end[{}]", i);
      last.residue.push_back({field<int>(item, "image", where),
                              field<std::string>(item, "phase", where),
                              field<std::string>(item, "component", where),
                              field<std::string>(item, "kind", where),
                              bytes_field(item, "bytes", where)});
    }
  }
  return p;
}

}  // namespace

}  // namespace mold
