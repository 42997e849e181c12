#pragma once
// The models mold serve holds: each with its pipeline, its own model cache and
// runner, made on first use and resident between requests. Worker thread only,
// but for snapshot().

#include <cstdint>
#include <map>
#include <memory>
#include <mold/cache/cache.hpp>
#include <mold/device/backend.hpp>
#include <mold/net/server_metrics.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/runner.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/family_lookup.hpp"
#include "common/host.hpp"

namespace mold_cli {

/// What the server builds its pipelines with.
struct ServeModels {
  bool tiny = false;  ///< every model at the tiny architecture, seeded
  std::vector<std::string> model_dirs;
  std::string dtype;  ///< "": float32 for tiny, else bfloat16
  std::string backend = "cpu";
};

/// A model the server holds: its pipeline, its cache, its runner.
struct ModelEntry {
  std::string key;  ///< "z-image-turbo:bf16", "+tiny" for seeded
  mold::tools::FoundModel found;
  std::unique_ptr<mold::Pipeline> pipeline;
  std::unique_ptr<mold::ModelCache> cache;
  std::unique_ptr<mold::Runner> runner;
  /// Each component's loads the metrics counted (the cache counts them too).
  std::map<std::string, std::uint64_t> loads_counted;
};

/// Each component's residency, bytes and loads, as the API lists them.
nlohmann::json residency_json(
    const std::vector<mold::CacheEntryState>& entries);

/// A model a request may name on this server.
struct ServedModel {
  std::string id;      ///< "z-image-turbo" (its default variant), "...:q8"
  std::string family;  ///< the plugin's family, "zimage"
};

class ModelPool {
 public:
  ModelPool(const mold::tools::Host& host, ServeModels models,
            std::shared_ptr<mold::Backend> backend,
            mold::net::ServerMetrics& metrics);

  /// The model `found` (at the tiny architecture when `tiny` or the server's
  /// --tiny), made when first asked for. Throws what its pipeline throws.
  ModelEntry& entry_for(const mold::tools::FoundModel& found, bool tiny);
  /// Parks every other model's resident components: the device has room for
  /// one model's work at a time.
  void park_others(const ModelEntry& keep);
  /// Drops the models named `model` (all when empty) with their caches and
  /// gives the backend's cached memory back: {"unloaded": [keys],
  /// "freed_bytes": N}.
  nlohmann::json unload(const std::string& model);
  /// Drops every model (the worker's last act: their tensors were made on
  /// it).
  void clear();
  /// Publishes the models and their residency for snapshot() and the metrics.
  void publish();
  /// The models requests may name here (any thread): each variant whose
  /// weights the server finds as a request would (every variant with
  /// --tiny), by name for a model's default variant and as MODEL:VARIANT.
  std::vector<ServedModel> served() const;
  /// The loaded models as /api/status and /api/models list them (any thread).
  nlohmann::json snapshot() const;
  /// The device's measured history every model learns from and records
  /// into (null when learning is off).
  const std::shared_ptr<mold::MeasuredHistory>& history() const {
    return history_;
  }

 private:
  const mold::tools::Host& host_;
  ServeModels models_;
  std::shared_ptr<mold::Backend> backend_;
  std::shared_ptr<mold::MeasuredHistory> history_;
  mold::net::ServerMetrics& metrics_;
  std::map<std::string, std::unique_ptr<ModelEntry>> entries_;
  mutable std::mutex snapshot_mutex_;
  nlohmann::json snapshot_ = nlohmann::json::array();
};

}  // namespace mold_cli
