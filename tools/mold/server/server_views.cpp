#include "server_views.hpp"

#include <mold/base/build_config.hpp>
#include <mold/runtime/event_json.hpp>

namespace mold_cli {

using Json = nlohmann::json;

Json status_view(const ServerDevice& where, double uptime_seconds,
                 const mold::MemoryStats& memory, const Json& models,
                 const QueueSnapshot& queue, const CurrentJob& current) {
  Json running = nullptr;
  if (!current.request_id.empty())
    running = {{"request_id", current.request_id},
               {"model", current.model},
               {"phase", current.phase}};
  return {{"version", MOLD_VERSION},
          {"backend", where.backend},
          {"device", where.device},
          {"uptime_seconds", uptime_seconds},
          {"memory", Json::parse(mold::memory_stats_json(memory))},
          {"models", models},
          {"busy", queue.busy},
          {"current", running},
          {"queue", {{"depth", queue.depth}, {"capacity", queue.capacity}}},
          {"requests",
           {{"served", queue.served},
            {"failed", queue.failed},
            {"rejected", queue.rejected}}}};
}

Json memory_view(const ServerDevice& where, const mold::MemoryStats& now,
                 bool busy, const Json& last_request) {
  return {{"backend", where.backend},
          {"device", where.device},
          {"now", Json::parse(mold::memory_stats_json(now))},
          {"busy", busy},
          {"last_request", last_request}};
}

Json models_view(const mold::Registry& registry, const Json& loaded) {
  Json list = Json::array();
  for (const mold::ModelFamily* family : registry.families()) {
    for (const auto& model : family->models) {
      Json variants = Json::array();
      for (const auto& v : model.variants)
        variants.push_back({{"name", v.name}, {"bytes", v.total_bytes()}});
      Json held = Json::array();
      for (const auto& entry : loaded)
        if (entry["model"] == model.name) held.push_back(entry);
      list.push_back({{"name", model.name},
                      {"family", family->name},
                      {"description", model.description},
                      {"default_variant", model.default_variant},
                      {"variants", variants},
                      {"runnable", bool(family->make_pipeline)},
                      {"loaded", held}});
    }
  }
  return {{"models", list}};
}

}  // namespace mold_cli
