#include "generation_service.hpp"

#include <fmt/format.h>

#include <atomic>
#include <mold/base/error.hpp>
#include <mold/cache/cache.hpp>
#include <mold/device/backend.hpp>
#include <mold/net/api_error.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/event_json.hpp>
#include <mold/runtime/runner.hpp>
#include <mutex>
#include <thread>

#include "admission.hpp"
#include "common/family_lookup.hpp"
#include "generation/image_output.hpp"
#include "job_queue.hpp"
#include "server_views.hpp"

namespace mold_cli {

namespace tools = mold::tools;
namespace codes = mold::net::codes;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

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
  mold::net::ServerMetrics& metrics;
  std::shared_ptr<mold::Backend> backend;
  ServerDevice where;
  Clock::time_point started = Clock::now();
  JobQueue queue;
  ModelPool pool;                          // worker only, but for its snapshot
  std::atomic<std::uint64_t> next_job{1};  // JobQueue::Job::id

  mutable std::mutex mutex;  // guards current and last_request
  CurrentJob current;
  Json last_request;  // null before the first

  std::thread worker;

  State(const tools::Host& h, ServeModels models, std::size_t capacity,
        mold::net::ServerMetrics& m, std::shared_ptr<mold::Backend> b)
      : host(h),
        metrics(m),
        backend(std::move(b)),
        where{backend->name(), backend->device_name()},
        queue(capacity,
              [&m](const QueueSnapshot& q) {
                m.set_queue(q.depth, q.capacity, q.busy);
              }),
        pool(h, std::move(models), backend, m) {}

  void run_job(QueuedJob& job);
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
      state_.current.phase = e.phase;
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

namespace {

/// Whether a job no longer wanted stopped because its client went away.
bool client_left(const QueuedJob& job) {
  return !job.callbacks.client_left || job.callbacks.client_left();
}

}  // namespace

void GenerationService::State::run_job(QueuedJob& job) {
  const auto started_at = Clock::now();
  bool started = false;  // on_start was called
  Json record = {{"request_id", job.request_id},
                 {"model", job.request.model_spec},
                 {"seed", job.request.generate.seed},
                 {"phases", Json::array()}};
  auto finish = [&](std::optional<GeneratedPng> png,
                    std::optional<ApiFailure> failure) {
    const double seconds =
        std::chrono::duration<double>(Clock::now() - started_at).count();
    const bool rejected =
        failure && (failure->code == codes::kInsufficientMemory ||
                    failure->code == codes::kNeverFits);
    // A job no longer wanted: dropped before it started, or stopped at a
    // phase or step, because its client went away or another image of its
    // request failed.
    const bool stopped =
        failure && job.callbacks.wanted && !job.callbacks.wanted();
    const bool gone = stopped && client_left(job);
    // The record says what the metrics say: a job nobody waits for any more
    // was stopped, it did not fail.
    record["status"] = !failure  ? "ok"
                       : gone    ? "cancelled"
                       : stopped ? "batch_failed"
                                 : failure->code;
    if (failure) record["error"] = failure->message;
    if (gone) metrics.count_client_gone(started ? "running" : "queued");
    if (rejected) metrics.count_rejection(failure->code);
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = {};
      if (!record["phases"].empty() || !failure) last_request = record;
    }
    // Idle before the client hears the answer: its next request is not told
    // it waits behind this one.
    queue.job_done(!failure   ? JobQueue::Outcome::served
                   : rejected ? JobQueue::Outcome::rejected
                              : JobQueue::Outcome::failed,
                   seconds);
    metrics.count_generation(!failure ? "ok"
                             : failure->oom && failure->oom->contains("label")
                                 ? "oom"
                             : rejected ? "rejected"
                             : gone     ? "cancelled"
                             : stopped  ? "batch_failed"
                                        : "error");
    if (failure && failure->oom && failure->oom->contains("label"))
      metrics.count_oom(where.backend);
    if (job.callbacks.on_done)
      job.callbacks.on_done(std::move(png), std::move(failure));
  };
  if (job.callbacks.wanted && !job.callbacks.wanted())
    return finish(
        std::nullopt,
        api_failure(codes::kBadRequest,
                    client_left(job) ? "the client went away before its job "
                                       "started"
                                     : "another image of its request failed "
                                       "before it started"));
  tools::FailureContext context;
  context.registry = host.registry.get();
  context.backend = where.backend;
  context.device = where.device;
  context.origin.kind = mold::Origin::Kind::remote;
  context.origin.host = job.client_host;

  ModelEntry* entry = nullptr;
  std::optional<mold::ResolvedRequest> resolved;
  try {
    entry = &pool.entry_for(job.found, job.request.tiny);
    pool.park_others(*entry);
    resolved =
        entry->pipeline->resolve_request(job.request.generate).first_image();
    if (auto refused = admit(*entry, *resolved, host, where, pool.history())) {
      pool.publish();
      return finish(std::nullopt, std::move(refused));
    }
  } catch (...) {
    return finish(std::nullopt, current_failure(context));
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    current = {job.request_id, entry->key, ""};
  }
  if (job.callbacks.on_start) job.callbacks.on_start();
  started = true;

  JobObserver observer(*this, *entry, job, record);
  entry->runner->add_observer(&observer);
  // A client that goes away stops its job before the next phase or step.
  if (job.callbacks.wanted)
    entry->runner->set_cancel([&job] { return !job.callbacks.wanted(); },
                              "the client went away; its job was stopped");
  struct Detach {
    mold::Runner& runner;
    mold::RunObserver* observer;
    ~Detach() {
      runner.remove_observer(observer);
      runner.set_cancel(nullptr);
    }
  } detach{*entry->runner, &observer};
  std::optional<GeneratedPng> png;
  std::optional<ApiFailure> error;
  const mold::GenerateRequest& request = **resolved;
  try {
    entry->runner->run(*resolved, [&](mold::ImageRecord& image_record,
                                      const mold::GeneratedImage& image) {
      GeneratedPng out;
      out.png = encode_image(
          image.rgb, png_text(*entry->pipeline, request, image_record.seed));
      out.seed = image_record.seed;
      out.width = request.width;
      out.height = request.height;
      out.steps = request.steps;
      out.model = entry->pipeline->model();
      out.variant = entry->pipeline->variant();
      out.weights = entry->pipeline->describe_weights();
      out.seeded_weights = entry->pipeline->seeded_weights();
      png = std::move(out);
    });
    png->seconds =
        std::chrono::duration<double>(Clock::now() - started_at).count();
  } catch (...) {
    error = current_failure(context);
  }
  pool.publish();
  finish(std::move(png), std::move(error));
}

GenerationService::GenerationService(const tools::Host& host,
                                     ServeModels models,
                                     std::size_t queue_capacity,
                                     mold::net::ServerMetrics& metrics)
    : state_([&] {
        // The backend first: `models` moves into the state.
        auto backend = host.registry->create_backend(models.backend);
        return std::make_unique<State>(host, std::move(models), queue_capacity,
                                       metrics, std::move(backend));
      }()) {
  State& s = *state_;
  s.metrics.export_zeros(s.where.backend);
  s.worker = std::thread([&s] {
    s.queue.run_worker();
    s.pool.clear();  // the models go with the worker: their tensors were
                     // made on it
  });
}

GenerationService::~GenerationService() { stop(); }

std::size_t GenerationService::queue_capacity() const {
  return state_->queue.capacity();
}
const std::string& GenerationService::backend_name() const {
  return state_->where.backend;
}
const std::string& GenerationService::device_name() const {
  return state_->where.device;
}

std::optional<ApiFailure> GenerationService::submit(GenerationRequest request,
                                                    std::string request_id,
                                                    std::string client_host,
                                                    JobCallbacks callbacks) {
  std::vector<Submission> one;
  one.push_back({std::move(request), std::move(callbacks)});
  return submit_all(std::move(one), std::move(request_id),
                    std::move(client_host));
}

std::optional<ApiFailure> GenerationService::submit_all(
    std::vector<Submission> submissions, const std::string& request_id,
    const std::string& client_host) {
  State& s = *state_;
  if (submissions.empty()) return std::nullopt;
  const auto watch_gone = submissions.front().callbacks.watch_gone;
  std::vector<JobQueue::Job> queued;
  std::vector<std::uint64_t> ids;
  for (auto& submission : submissions) {
    auto job = std::make_shared<QueuedJob>();
    try {
      job->found =
          tools::find_model(*s.host.registry, submission.request.model_spec);
    } catch (const mold::Error& e) {
      return api_failure(codes::kModelNotFound, e.what());
    }
    if (!job->found.family->make_pipeline)
      return api_failure(
          codes::kModelNotFound,
          fmt::format("model {}: the {} plugin on this server cannot run it "
                      "(it has no pipeline)",
                      job->found.model->name, job->found.family->name));
    job->request = std::move(submission.request);
    job->request_id = request_id;
    job->client_host = client_host;
    job->callbacks = std::move(submission.callbacks);
    JobQueue::Job entry;
    entry.id = s.next_job++;
    ids.push_back(entry.id);
    entry.on_queued = job->callbacks.on_queued;
    entry.run = [&s, job] { s.run_job(*job); };
    entry.refuse = [job](ApiFailure failure) {
      if (job->callbacks.on_done)
        job->callbacks.on_done(std::nullopt, std::move(failure));
    };
    queued.push_back(std::move(entry));
  }
  auto refused = s.queue.submit_all(std::move(queued));
  if (refused && refused->code == codes::kQueueFull)
    s.metrics.count_rejection(codes::kQueueFull);
  // A client that leaves frees its slots at once; a running job stops at
  // its next phase or step (`wanted`, in run_job).
  if (!refused && watch_gone)
    watch_gone([&s, ids] {
      for (const std::uint64_t id : ids) {
        if (!s.queue.withdraw(id)) continue;
        s.metrics.count_client_gone("queued");
        s.metrics.count_generation("cancelled");
      }
    });
  return refused;
}

void GenerationService::unload(
    const std::string& model_spec,
    std::function<void(std::optional<Json>, std::optional<ApiFailure>)> done) {
  State& s = *state_;
  const bool queued = s.queue.control([&s, model_spec, done] {
    std::string model;
    if (!model_spec.empty()) {
      try {
        model = tools::find_model(*s.host.registry, model_spec).model->name;
      } catch (const mold::Error& e) {
        done(std::nullopt, api_failure(codes::kModelNotFound, e.what()));
        return;
      }
    }
    done(s.pool.unload(model), std::nullopt);
  });
  if (!queued) done(std::nullopt, shutting_down());
}

Json GenerationService::status() const {
  const State& s = *state_;
  const mold::MemoryStats memory = s.backend->stats();
  CurrentJob current;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    current = s.current;
  }
  return status_view(
      s.where, std::chrono::duration<double>(Clock::now() - s.started).count(),
      memory, s.pool.snapshot(), s.queue.snapshot(), current);
}

Json GenerationService::memory() const {
  const State& s = *state_;
  const mold::MemoryStats now = s.backend->stats();
  Json last;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    last = s.last_request;
  }
  return memory_view(s.where, now, s.queue.snapshot().busy, last);
}

Json GenerationService::models() const {
  return models_view(*state_->host.registry, state_->pool.snapshot());
}

std::vector<ServedModel> GenerationService::served_models() const {
  return state_->pool.served();
}

void GenerationService::refresh_metrics() const {
  const State& s = *state_;
  s.metrics.set_memory(s.where.backend, s.backend->stats());
  const QueueSnapshot q = s.queue.snapshot();
  s.metrics.set_queue(q.depth, q.capacity, q.busy);
}

bool GenerationService::drain(std::chrono::milliseconds grace) {
  return state_->queue.drain(grace);
}

void GenerationService::stop() {
  State& s = *state_;
  s.queue.stop();
  if (s.worker.joinable()) s.worker.join();
}

}  // namespace mold_cli
