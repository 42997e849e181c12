#include "model_pool.hpp"

#include <fmt/format.h>

#include <utility>

namespace mold_cli {

using Json = nlohmann::json;

Json residency_json(const std::vector<mold::CacheEntryState>& entries) {
  Json out = Json::array();
  for (const auto& e : entries)
    out.push_back({{"component", e.name},
                   {"residency", std::string(mold::to_string(e.residency))},
                   {"bytes", e.bytes},
                   {"loads", e.loads}});
  return out;
}

ModelPool::ModelPool(const mold::tools::Host& host, ServeModels models,
                     std::shared_ptr<mold::Backend> backend,
                     mold::net::ServerMetrics& metrics)
    : host_(host),
      models_(std::move(models)),
      backend_(std::move(backend)),
      history_(mold::tools::open_history(host_, *backend_)),
      metrics_(metrics) {
  metrics_.set_models_loaded(0);
}

ModelEntry& ModelPool::entry_for(const mold::tools::FoundModel& found,
                                 bool tiny) {
  tiny = tiny || models_.tiny;
  const std::string key = fmt::format("{}:{}{}", found.model->name,
                                      found.variant->name, tiny ? "+tiny" : "");
  auto it = entries_.find(key);
  if (it != entries_.end()) return *it->second;
  const std::string dtype = !models_.dtype.empty() ? models_.dtype
                            : tiny                 ? "float32"
                                                   : "bfloat16";
  const mold::PipelineOptions options = mold::tools::pipeline_options(
      host_, found, tiny, models_.model_dirs, dtype, models_.backend);
  auto entry = std::make_unique<ModelEntry>();
  entry->key = key;
  entry->found = found;
  entry->pipeline = found.family->make_pipeline(options);
  entry->cache =
      std::make_unique<mold::ModelCache>(backend_, host_.config.cache);
  entry->runner = std::make_unique<mold::Runner>(
      *entry->pipeline, *entry->cache, *host_.registry);
  entry->runner->set_history(history_, "mold serve");
  ModelEntry& made = *entry;
  entries_.emplace(key, std::move(entry));
  return made;
}

std::vector<ServedModel> ModelPool::served() const {
  std::vector<ServedModel> out;
  for (const mold::ModelFamily* family : host_.registry->families()) {
    if (!family->make_pipeline) continue;
    for (const auto& model : family->models)
      for (const auto& variant : model.variants) {
        const mold::tools::FoundModel found{family, &model, &variant};
        try {
          mold::tools::pipeline_options(host_, found, models_.tiny,
                                        models_.model_dirs, models_.dtype,
                                        models_.backend);
        } catch (const std::exception&) {
          continue;  // no weights here: a request for it is MODEL_NOT_FOUND
        }
        if (variant.name == model.default_variant)
          out.push_back({model.name, family->name});
        out.push_back({model.name + ":" + variant.name, family->name});
      }
  }
  return out;
}

void ModelPool::park_others(const ModelEntry& keep) {
  for (auto& [key, entry] : entries_) {
    if (entry.get() == &keep) continue;
    for (const auto& e : entry->cache->entries())
      if (e.residency == mold::Residency::device && e.locks == 0) {
        entry->cache->park(e.name);
        metrics_.count_park(e.name);
      }
  }
}

Json ModelPool::unload(const std::string& model) {
  const mold::Bytes before = backend_->stats().allocated;
  Json unloaded = Json::array();
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (model.empty() || it->second->found.model->name == model) {
      unloaded.push_back(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  backend_->empty_cache();
  const mold::Bytes after = backend_->stats().allocated;
  publish();
  return {{"unloaded", unloaded},
          {"freed_bytes", before > after ? before - after : 0}};
}

void ModelPool::clear() {
  entries_.clear();
  publish();
}

void ModelPool::publish() {
  Json list = Json::array();
  for (const auto& [key, entry] : entries_)
    list.push_back({{"key", key},
                    {"model", entry->pipeline->model()},
                    {"variant", entry->pipeline->variant()},
                    {"weights", entry->pipeline->describe_weights()},
                    {"seeded_weights", entry->pipeline->seeded_weights()},
                    {"components", residency_json(entry->cache->entries())}});
  {
    std::lock_guard<std::mutex> lock(snapshot_mutex_);
    snapshot_ = std::move(list);
  }
  metrics_.set_models_loaded(entries_.size());
}

Json ModelPool::snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return snapshot_;
}

}  // namespace mold_cli
