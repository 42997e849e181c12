#include "generation_service.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/cache/cache.hpp>
#include <mold/device/backend.hpp>
#include <mold/net/api_error.hpp>
#include <mold/net/oom_json.hpp>
#include <mold/oom/oom_advice.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/event_json.hpp>
#include <mold/runtime/runner.hpp>
#include <mutex>
#include <thread>

#include "common/family_lookup.hpp"
#include "common/readable_error.hpp"
#include "image_output.hpp"
#include "run_plan.hpp"

namespace mold_cli {

namespace tools = mold::tools;
namespace codes = mold::net::codes;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

Json parse_json(const std::string& text) { return Json::parse(text); }

Json residency_json(const std::vector<mold::CacheEntryState>& entries) {
  Json out = Json::array();
  for (const auto& e : entries)
    out.push_back({{"component", e.name},
                   {"residency", std::string(mold::to_string(e.residency))},
                   {"bytes", e.bytes},
                   {"loads", e.loads}});
  return out;
}

/// A model the server holds: its pipeline, its cache, its runner.
struct ModelEntry {
  std::string key;  ///< "z-image-turbo:bf16", "+tiny" for seeded
  tools::FoundModel found;
  std::unique_ptr<mold::Pipeline> pipeline;
  std::unique_ptr<mold::ModelCache> cache;
  std::unique_ptr<mold::Runner> runner;
  /// Each component's loads the metrics counted (the cache counts them too).
  std::map<std::string, std::uint64_t> loads_counted;
};

struct QueuedJob {
  GenerationRequest request;
  std::string request_id;
  std::string client_host;
  JobCallbacks callbacks;
  tools::FoundModel found;
};

}  // namespace

struct GenerationService::State {
  const tools::Host& host;
  ServeModels models;
  std::size_t capacity;
  mold::net::ServerMetrics& metrics;
  std::shared_ptr<mold::Backend> backend;
  std::string backend_name, device_name;
  Clock::time_point started = Clock::now();

  mutable std::mutex mutex;  // guards everything below but `entries`
  std::condition_variable wake;
  std::deque<QueuedJob> queue;
  std::deque<std::function<void()>> control;
  bool busy = false;
  bool refusing = false;
  bool stopping = false;
  std::string current_request, current_model, current_phase;
  std::uint64_t served = 0, failed = 0, rejected = 0;
  double job_seconds_total = 0;
  Json snapshot_models = Json::array();
  Json last_request;  // null before the first

  // Worker only.
  std::map<std::string, std::unique_ptr<ModelEntry>> entries;
  std::thread worker;

  State(const tools::Host& h, ServeModels m, std::size_t c,
        mold::net::ServerMetrics& metrics_)
      : host(h), models(std::move(m)), capacity(c), metrics(metrics_) {}

  void publish_queue_locked() const {
    metrics.set_queue(queue.size(), capacity, busy);
  }

  void publish_models() {
    Json list = Json::array();
    for (const auto& [key, entry] : entries)
      list.push_back({{"key", key},
                      {"model", entry->pipeline->model()},
                      {"variant", entry->pipeline->variant()},
                      {"weights", entry->pipeline->describe_weights()},
                      {"seeded_weights", entry->pipeline->seeded_weights()},
                      {"components", residency_json(entry->cache->entries())}});
    std::lock_guard<std::mutex> lock(mutex);
    snapshot_models = std::move(list);
    metrics.set_models_loaded(entries.size());
  }

  void run();
  void run_job(QueuedJob& job);
  ModelEntry& entry_for(const QueuedJob& job);
  void park_others(const ModelEntry& keep);
  std::optional<ApiFailure> admit(ModelEntry& entry,
                                  const mold::GenerateRequest& resolved);
};

namespace {

/// One job's view of the run: forwards events to the client, counts parks,
/// loads and phase durations, and records the phases for /api/memory.
class JobObserver final : public mold::RunObserver {
 public:
  JobObserver(GenerationService::State& state, ModelEntry& entry,
              const QueuedJob& job, Json& record)
      : state_(state), entry_(entry), job_(job), record_(record) {}

  void on_phase(const mold::PhaseEvent& e) override {
    if (e.stage == mold::PhaseStage::start) {
      std::lock_guard<std::mutex> lock(state_.mutex);
      state_.current_phase = e.phase;
    }
    if (e.stage == mold::PhaseStage::start)
      for (const auto& parked : e.parked) state_.metrics.count_park(parked);
    if (e.stage == mold::PhaseStage::done ||
        e.stage == mold::PhaseStage::failed) {
      state_.metrics.observe_phase(e.phase, mold::to_string(e.stage),
                                   e.seconds);
      count_loads(e.residency);
      const mold::Bytes working =
          e.after.peak_allocated > e.before.allocated
              ? e.after.peak_allocated - e.before.allocated
              : 0;
      record_["phases"].push_back(
          {{"phase", e.phase},
           {"component", e.component},
           {"status", std::string(mold::to_string(e.stage))},
           {"seconds", e.seconds},
           {"estimate_bytes", e.estimate.bytes},
           {"working_peak_bytes", working},
           {"before", Json::parse(mold::memory_stats_json(e.before))},
           {"after", Json::parse(mold::memory_stats_json(e.after))},
           {"parked", e.parked},
           {"residency", residency_json(e.residency)}});
    }
    if (e.stage == mold::PhaseStage::reused)  // nothing ran: no peak
      record_["phases"].push_back(
          {{"phase", e.phase},
           {"component", e.component},
           {"status", std::string(mold::to_string(e.stage))},
           {"seconds", 0},
           {"estimate_bytes", 0},
           {"working_peak_bytes", 0},
           {"before", Json::parse(mold::memory_stats_json(e.before))},
           {"after", Json::parse(mold::memory_stats_json(e.after))},
           {"parked", e.parked},
           {"residency", residency_json(e.residency)},
           {"detail", e.detail}});
    if (job_.callbacks.on_phase) job_.callbacks.on_phase(e);
  }

  void on_image(const mold::ImageRecord& image) override {
    record_["after_cleanup"] =
        Json::parse(mold::memory_stats_json(image.after_cleanup));
    record_["residency"] = residency_json(image.residency);
    record_["seconds"] = image.seconds;
  }

 private:
  void count_loads(const std::vector<mold::CacheEntryState>& residency) {
    for (const auto& entry : residency) {
      std::uint64_t& seen = entry_.loads_counted[entry.name];
      for (; seen < entry.loads; ++seen) state_.metrics.count_load(entry.name);
    }
  }

  GenerationService::State& state_;
  ModelEntry& entry_;
  const QueuedJob& job_;
  Json& record_;
};

}  // namespace

ModelEntry& GenerationService::State::entry_for(const QueuedJob& job) {
  const bool tiny = job.request.tiny || models.tiny;
  const std::string key =
      fmt::format("{}:{}{}", job.found.model->name, job.found.variant->name,
                  tiny ? "+tiny" : "");
  auto it = entries.find(key);
  if (it != entries.end()) return *it->second;
  const std::string dtype = !models.dtype.empty() ? models.dtype
                            : tiny                ? "float32"
                                                  : "bfloat16";
  const mold::PipelineOptions options = tools::pipeline_options(
      host, job.found, tiny, models.model_dirs, dtype, models.backend);
  auto entry = std::make_unique<ModelEntry>();
  entry->key = key;
  entry->found = job.found;
  entry->pipeline = job.found.family->make_pipeline(options);
  entry->cache = std::make_unique<mold::ModelCache>(backend, host.config.cache);
  entry->runner = std::make_unique<mold::Runner>(*entry->pipeline,
                                                 *entry->cache, *host.registry);
  ModelEntry& ref = *entry;
  entries.emplace(key, std::move(entry));
  return ref;
}

void GenerationService::State::park_others(const ModelEntry& keep) {
  // Each model has its own cache; the device has room for one model's work
  // at a time, so a job on one model parks the others first.
  for (auto& [key, entry] : entries) {
    if (entry.get() == &keep) continue;
    for (const auto& e : entry->cache->entries())
      if (e.residency == mold::Residency::device && e.locks == 0) {
        entry->cache->park(e.name);
        metrics.count_park(e.name);
      }
  }
}

std::optional<ApiFailure> GenerationService::State::admit(
    ModelEntry& entry, const mold::GenerateRequest& resolved) {
  // The most this model's work could have: what is free now plus what its
  // own resident components hold (the others are parked by now).
  mold::Bytes room = entry.cache->available();
  for (const auto& e : entry.cache->entries())
    if (e.residency == mold::Residency::device) room += e.bytes;
  const auto steps = simulate_plan(
      entry.runner->plan(resolved), entry.pipeline->components(), room,
      host.config.cache.working_memory_floor, [&](const mold::Workload& w) {
        mold::RunContext context(*entry.cache, *host.registry, {});
        return context.estimate(w);
      });
  for (const auto& step : steps) {
    if (step.fits) continue;
    Json numbers = {{"phase", step.phase.phase},
                    {"component", step.phase.component},
                    {"estimate_bytes", step.estimate.bytes},
                    {"weights_bytes", step.component_bytes},
                    {"available_bytes", room},
                    {"backend", backend_name},
                    {"device", device_name}};
    ApiFailure failure;
    failure.code = std::string(codes::kInsufficientMemory);
    failure.message = fmt::format(
        "this server ({} on {}) cannot make an image of {} at {}x{}: its {} "
        "phase {}. It has {} for the model's work even after parking "
        "everything else. Lower the size, use a smaller variant, or send it "
        "to a server with more memory",
        backend_name, device_name, entry.pipeline->model(), resolved.width,
        resolved.height, step.phase.phase, step.problem,
        mold::format_bytes(room));
    failure.oom = Json{{"admission", numbers}};
    return failure;
  }
  return std::nullopt;
}

void GenerationService::State::run_job(QueuedJob& job) {
  const auto started = Clock::now();
  Json record = {{"request_id", job.request_id},
                 {"model", job.request.model_spec},
                 {"seed", job.request.generate.seed},
                 {"phases", Json::array()}};
  auto finish = [&](std::optional<GeneratedPng> png,
                    std::optional<ApiFailure> failure) {
    const double seconds =
        std::chrono::duration<double>(Clock::now() - started).count();
    record["status"] = failure ? failure->code : "ok";
    if (failure) record["error"] = failure->message;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (failure)
        ++failed;
      else
        ++served;
      // Idle before the client hears the answer: its next request is not
      // told it waits behind this one.
      busy = false;
      publish_queue_locked();
      job_seconds_total += seconds;
      if (!record["phases"].empty() || !failure) last_request = record;
    }
    metrics.count_generation(
        !failure                                          ? "ok"
        : failure->oom && failure->oom->contains("label") ? "oom"
        : failure->code == codes::kInsufficientMemory     ? "rejected"
                                                          : "error");
    if (job.callbacks.on_done)
      job.callbacks.on_done(std::move(png), std::move(failure));
  };
  if (job.callbacks.wanted && !job.callbacks.wanted()) {
    ApiFailure gone{std::string(codes::kBadRequest),
                    "the client went away before its job started",
                    {},
                    {}};
    return finish(std::nullopt, std::move(gone));
  }
  tools::FailureContext failure;
  failure.registry = host.registry.get();
  failure.backend = backend_name;
  failure.device = device_name;
  failure.origin.kind = mold::Origin::Kind::remote;
  failure.origin.host = job.client_host;
  auto api_failure = [](std::string_view code, std::string message) {
    ApiFailure f;
    f.code = std::string(code);
    f.message = std::move(message);
    return f;
  };
  ModelEntry* entry = nullptr;
  try {
    entry = &entry_for(job);
  } catch (const mold::NotFound& e) {
    return finish(std::nullopt, api_failure(codes::kModelNotFound, e.what()));
  } catch (const mold::InvalidArgument& e) {
    return finish(std::nullopt, api_failure(codes::kValidationError, e.what()));
  } catch (...) {
    tools::DescribedFailure d = tools::describe_failure(failure);
    return finish(std::nullopt, api_failure(codes::kInferenceError, d.message));
  }
  mold::GenerateRequest resolved;
  try {
    park_others(*entry);
    resolved = entry->pipeline->resolve(job.request.generate);
    resolved.batch = 1;
    if (auto refused = admit(*entry, resolved)) {
      metrics.count_rejection(refused->code);
      publish_models();
      return finish(std::nullopt, std::move(refused));
    }
  } catch (const mold::InvalidArgument& e) {
    return finish(std::nullopt, api_failure(codes::kValidationError, e.what()));
  } catch (...) {
    tools::DescribedFailure d = tools::describe_failure(failure);
    return finish(std::nullopt, api_failure(codes::kInferenceError, d.message));
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    current_request = job.request_id;
    current_model = entry->key;
    current_phase.clear();
  }
  if (job.callbacks.on_start) job.callbacks.on_start();

  JobObserver observer(*this, *entry, job, record);
  entry->runner->add_observer(&observer);
  struct Detach {
    mold::Runner& runner;
    mold::RunObserver* observer;
    ~Detach() { runner.remove_observer(observer); }
  } detach{*entry->runner, &observer};
  std::optional<GeneratedPng> png;
  std::optional<ApiFailure> error;
  try {
    entry->runner->run(resolved, [&](mold::ImageRecord& record_,
                                     const mold::GeneratedImage& image) {
      GeneratedPng out;
      out.png = encode_image(
          image.rgb, png_text(*entry->pipeline, resolved, record_.seed));
      out.seed = record_.seed;
      out.width = resolved.width;
      out.height = resolved.height;
      out.steps = resolved.steps;
      out.model = entry->pipeline->model();
      out.variant = entry->pipeline->variant();
      out.weights = entry->pipeline->describe_weights();
      out.seeded_weights = entry->pipeline->seeded_weights();
      png = std::move(out);
    });
    png->seconds =
        std::chrono::duration<double>(Clock::now() - started).count();
  } catch (const mold::InsufficientMemory& e) {
    metrics.count_rejection(codes::kInsufficientMemory);
    error = api_failure(codes::kInsufficientMemory,
                        fmt::format("{} (on this server: {}, {})", e.what(),
                                    backend_name, device_name));
    error->oom = Json{{"admission",
                       {{"needed_bytes", e.needed()},
                        {"free_bytes", e.free()},
                        {"evictable_bytes", e.evictable()},
                        {"backend", backend_name},
                        {"device", device_name}}}};
  } catch (const mold::InvalidArgument& e) {
    error = api_failure(codes::kValidationError, e.what());
  } catch (...) {
    tools::DescribedFailure d = tools::describe_failure(failure);
    error = api_failure(codes::kInferenceError, d.message);
    if (d.oom) {
      metrics.count_oom(d.oom->backend);
      error->oom = mold::net::oom_json(*d.oom, mold::oom_label(*d.oom), d.hints,
                                       d.exception_kind);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    current_request.clear();
    current_model.clear();
    current_phase.clear();
  }
  publish_models();
  finish(std::move(png), std::move(error));
}

void GenerationService::State::run() {
  while (true) {
    std::unique_lock<std::mutex> lock(mutex);
    wake.wait(lock,
              [&] { return stopping || !queue.empty() || !control.empty(); });
    if (!control.empty()) {
      auto task = std::move(control.front());
      control.pop_front();
      lock.unlock();
      task();
      continue;
    }
    if (stopping) break;
    QueuedJob job = std::move(queue.front());
    queue.pop_front();
    busy = true;
    std::vector<std::pair<std::function<void(int)>, int>> moved;
    int position = 1;
    for (const auto& waiting : queue)
      moved.emplace_back(waiting.callbacks.on_queued, position++);
    publish_queue_locked();
    lock.unlock();
    for (const auto& [notify, pos] : moved)
      if (notify) notify(pos);
    try {
      run_job(job);
    } catch (...) {
      // run_job answers every failure itself; nothing may stop the worker.
    }
    lock.lock();
    busy = false;
    publish_queue_locked();
  }
  // Stopping: whatever still waits is told so.
  std::deque<QueuedJob> left;
  {
    std::lock_guard<std::mutex> lock(mutex);
    left.swap(queue);
    publish_queue_locked();
  }
  for (auto& job : left)
    if (job.callbacks.on_done)
      job.callbacks.on_done(
          std::nullopt,
          ApiFailure{std::string(codes::kShuttingDown),
                     "the server is shutting down; retry on another server",
                     {},
                     {{"Retry-After", "5"}}});
  // The models go with the worker: their tensors were made on it.
  entries.clear();
}

GenerationService::GenerationService(const tools::Host& host,
                                     ServeModels models,
                                     std::size_t queue_capacity,
                                     mold::net::ServerMetrics& metrics)
    : state_(std::make_unique<State>(host, std::move(models), queue_capacity,
                                     metrics)) {
  State& s = *state_;
  s.backend = host.registry->create_backend(s.models.backend);
  s.backend_name = s.backend->name();
  s.device_name = s.backend->device_name();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.publish_queue_locked();
  }
  s.metrics.set_models_loaded(0);
  s.worker = std::thread([&s] { s.run(); });
}

GenerationService::~GenerationService() { stop(); }

const std::string& GenerationService::backend_name() const {
  return state_->backend_name;
}
const std::string& GenerationService::device_name() const {
  return state_->device_name;
}

std::optional<ApiFailure> GenerationService::submit(GenerationRequest request,
                                                    std::string request_id,
                                                    std::string client_host,
                                                    JobCallbacks callbacks) {
  State& s = *state_;
  QueuedJob job;
  try {
    job.found = tools::find_model(*s.host.registry, request.model_spec);
  } catch (const mold::Error& e) {
    return ApiFailure{std::string(codes::kModelNotFound), e.what(), {}, {}};
  }
  if (!job.found.family->make_pipeline)
    return ApiFailure{
        std::string(codes::kModelNotFound),
        fmt::format("model {}: the {} plugin on this server "
                    "cannot run it (it has no pipeline)",
                    job.found.model->name, job.found.family->name),
        {},
        {}};
  job.request = std::move(request);
  job.request_id = std::move(request_id);
  job.client_host = std::move(client_host);
  job.callbacks = std::move(callbacks);
  int ahead = 0;
  std::function<void(int)> notify = job.callbacks.on_queued;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.refusing || s.stopping)
      return ApiFailure{std::string(codes::kShuttingDown),
                        "the server is shutting down; retry on another server",
                        {},
                        {{"Retry-After", "5"}}};
    // It would wait behind the running job and those queued; with the
    // device idle and nothing queued it starts at once (even with --queue 0).
    const std::size_t would_wait = s.queue.size() + (s.busy ? 1 : 0);
    if (would_wait > s.capacity) {
      ++s.rejected;
      s.metrics.count_rejection(codes::kQueueFull);
      const double per_job =
          s.served + s.failed
              ? s.job_seconds_total / double(s.served + s.failed)
              : 1.0;
      const int retry = std::max(
          1, std::min(60, int(per_job * double(s.queue.size() + 1) + 0.5)));
      return ApiFailure{
          std::string(codes::kQueueFull),
          fmt::format("the queue is full: one request runs and {} wait for "
                      "the device (mold serve --queue {}); retry in {} s or "
                      "send it to another server",
                      s.queue.size(), s.capacity, retry),
          {},
          {{"Retry-After", std::to_string(retry)}}};
    }
    s.queue.push_back(std::move(job));
    ahead = int(s.queue.size()) - 1 + (s.busy ? 1 : 0);
    s.publish_queue_locked();
  }
  s.wake.notify_one();
  if (notify && ahead > 0) notify(ahead);
  return std::nullopt;
}

void GenerationService::unload(
    const std::string& model_spec,
    std::function<void(std::optional<Json>, std::optional<ApiFailure>)> done) {
  State& s = *state_;
  std::function<void()> task = [&s, model_spec, done] {
    std::string want;
    if (!model_spec.empty()) {
      try {
        want = tools::find_model(*s.host.registry, model_spec).model->name;
      } catch (const mold::Error& e) {
        done(std::nullopt,
             ApiFailure{std::string(codes::kModelNotFound), e.what(), {}, {}});
        return;
      }
    }
    const mold::Bytes before = s.backend->stats().allocated;
    Json unloaded = Json::array();
    for (auto it = s.entries.begin(); it != s.entries.end();) {
      if (want.empty() || it->second->found.model->name == want) {
        unloaded.push_back(it->first);
        it = s.entries.erase(it);
      } else {
        ++it;
      }
    }
    s.backend->empty_cache();
    const mold::Bytes after = s.backend->stats().allocated;
    s.publish_models();
    done(Json{{"unloaded", unloaded},
              {"freed_bytes", before > after ? before - after : 0}},
         std::nullopt);
  };
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.stopping) {
      s.control.push_back(std::move(task));
      task = nullptr;
    }
  }
  if (task) {
    done(std::nullopt, ApiFailure{std::string(codes::kShuttingDown),
                                  "the server is shutting down",
                                  {},
                                  {}});
    return;
  }
  s.wake.notify_one();
}

Json GenerationService::status() const {
  const State& s = *state_;
  const Json memory = parse_json(mold::memory_stats_json(s.backend->stats()));
  std::lock_guard<std::mutex> lock(s.mutex);
  Json current = nullptr;
  if (!s.current_request.empty())
    current = {{"request_id", s.current_request},
               {"model", s.current_model},
               {"phase", s.current_phase}};
  return {
      {"version", MOLD_VERSION},
      {"backend", s.backend_name},
      {"device", s.device_name},
      {"uptime_seconds",
       std::chrono::duration<double>(Clock::now() - s.started).count()},
      {"memory", memory},
      {"models", s.snapshot_models},
      {"busy", s.busy},
      {"current", current},
      {"queue", {{"depth", s.queue.size()}, {"capacity", s.capacity}}},
      {"requests",
       {{"served", s.served}, {"failed", s.failed}, {"rejected", s.rejected}}}};
}

Json GenerationService::memory() const {
  const State& s = *state_;
  const Json now = parse_json(mold::memory_stats_json(s.backend->stats()));
  std::lock_guard<std::mutex> lock(s.mutex);
  return {{"backend", s.backend_name},
          {"device", s.device_name},
          {"now", now},
          {"busy", s.busy},
          {"last_request", s.last_request}};
}

Json GenerationService::models() const {
  const State& s = *state_;
  Json loaded;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    loaded = s.snapshot_models;
  }
  Json list = Json::array();
  for (const mold::ModelFamily* family : s.host.registry->families()) {
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

void GenerationService::refresh_metrics() const {
  const State& s = *state_;
  s.metrics.set_memory(s.backend_name, s.backend->stats());
  std::lock_guard<std::mutex> lock(s.mutex);
  s.publish_queue_locked();
}

bool GenerationService::drain(std::chrono::milliseconds grace) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.refusing = true;
  }
  const auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.queue.empty() && !s.busy) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void GenerationService::stop() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  if (s.worker.joinable()) s.worker.join();
}

}  // namespace mold_cli
