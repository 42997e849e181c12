#include "mold/profile/profile_report.hpp"

#include <nlohmann/json.hpp>

namespace mold {

namespace {

using Json = nlohmann::ordered_json;

Json residency_json(const std::vector<CacheEntryState>& entries) {
  Json out = Json::array();
  for (const auto& e : entries) {
    Json item = {{"component", e.name},
                 {"residency", std::string(to_string(e.residency))},
                 {"bytes", e.bytes},
                 {"loads", e.loads}};
    item["released_on_park"] =
        e.released_on_park ? Json(*e.released_on_park) : Json(nullptr);
    out.push_back(std::move(item));
  }
  return out;
}

Json series_json(const SeriesVerdict& v) {
  return {{"values", v.values},
          {"slope", v.trend.slope},
          {"slope_low", v.trend.slope_low},
          {"slope_high", v.trend.slope_high},
          {"r_squared", v.trend.r_squared},
          {"min_step", v.trend.min_step},
          {"threshold", v.threshold},
          {"slope_threshold", v.slope_threshold},
          {"rises_every_image", v.rises_every_image},
          {"sloped", v.sloped},
          {"grows", v.grows()},
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
                      {"residency", residency_json(img.residency)}});
  out["images"] = std::move(images);
  Json phases = Json::array();
  for (const auto& ph : p.phases)
    phases.push_back({{"image", ph.image},
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
                      {"ok", row.ok}});
    out["parity"] = {{"ok", parity->ok},
                     {"summary", parity->summary},
                     {"images", parity->images},
                     {"phases", rows}};
  }
  return out.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace mold
