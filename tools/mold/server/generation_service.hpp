#pragma once
// mold serve's device side, composed of its concepts: the queue (job_queue),
// the models it holds (model_pool), admission by memory before a job runs
// (admission), the one exception map (api_failure) and the JSON views
// (server_views). It runs each job: resolve, admit, run, answer. The HTTP side
// (api_routes) only submits jobs and reads snapshots.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mold/net/server_metrics.hpp>
#include <mold/runtime/pipeline.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api_failure.hpp"
#include "common/host.hpp"
#include "model_pool.hpp"

namespace mold_cli {

/// One image to make.
struct GenerationRequest {
  std::string model_spec;          ///< "z-image-turbo[:variant]"
  bool tiny = false;               ///< this request at the tiny architecture
  mold::GenerateRequest generate;  ///< batch 1; seed set
};

struct GeneratedPng {
  std::string png;  ///< the PNG file, text chunks included
  std::uint64_t seed = 0;
  int width = 0, height = 0, steps = 0;
  double seconds = 0;
  std::string model, variant, weights;
  bool seeded_weights = false;
};

/// Told of a job as it goes, on the worker thread (on_queued also on the
/// submitting thread). Exactly one of on_done's two arguments is set.
struct JobCallbacks {
  std::function<void(int position)> on_queued;  ///< 1 = next
  std::function<void()> on_start;               ///< admitted, about to run
  std::function<void(const mold::PhaseEvent&)> on_phase;
  std::function<void(std::optional<GeneratedPng>, std::optional<ApiFailure>)>
      on_done;
  /// False when the job is no longer wanted: a job not yet started is
  /// dropped, a running one stops before its next phase or step.
  std::function<bool()> wanted;
  /// Whether its client went away, asked when wanted() turned false; unset:
  /// it did. A request of several images stops them all when one fails:
  /// those are counted as `batch_failed`, not as a client that left.
  std::function<bool()> client_left;
  /// Given what to call when the client goes away, for the transport to call
  /// then (mold serve: the connection's close): a waiting job is withdrawn
  /// from the queue at once, its slot freed, never answered.
  std::function<void(std::function<void()> gone)> watch_gone;
};

/// One image of a request that asks for several, and what to tell of it.
struct Submission {
  GenerationRequest request;
  JobCallbacks callbacks;
};

class GenerationService {
 public:
  /// Opens the backend (throws for an unknown one) and starts the worker.
  GenerationService(const mold::tools::Host& host, ServeModels models,
                    std::size_t queue_capacity,
                    mold::net::ServerMetrics& metrics);
  ~GenerationService();  ///< stop(); joins the worker

  /// Queues a job. A refusal (unknown model: MODEL_NOT_FOUND; queue full:
  /// QUEUE_FULL with Retry-After; shutting down) comes back at once and the
  /// callbacks are never called; otherwise on_done is called exactly once.
  /// `client_host` is the Host header: the name the client used for this
  /// server, which an out-of-memory report's label and hints then use.
  std::optional<ApiFailure> submit(GenerationRequest request,
                                   std::string request_id,
                                   std::string client_host,
                                   JobCallbacks callbacks);
  /// Queues every submission (one request's images, run one after another)
  /// or none: the same refusals as submit(), QUEUE_FULL when the last would
  /// not fit. The first's watch_gone withdraws them all when the client
  /// goes.
  std::optional<ApiFailure> submit_all(std::vector<Submission> submissions,
                                       const std::string& request_id,
                                       const std::string& client_host);

  /// Unloads `model_spec` (every model when empty) on the worker, between
  /// jobs: its pipeline and cache are dropped and their memory given back.
  /// `done` (on the worker) gets what was unloaded and the bytes freed, or a
  /// failure (an unknown model).
  void unload(const std::string& model_spec,
              std::function<void(std::optional<nlohmann::json>,
                                 std::optional<ApiFailure>)>
                  done);

  nlohmann::json status() const;  ///< GET /api/status
  nlohmann::json memory() const;  ///< GET /api/memory
  nlohmann::json models() const;  ///< GET /api/models
  /// The models requests may name (ModelPool::served).
  std::vector<ServedModel> served_models() const;
  /// Updates the metrics' gauges (memory, queue, models) for a scrape.
  void refresh_metrics() const;

  /// New jobs are refused (SHUTTING_DOWN); waits up to `grace` for the queue
  /// and the running job to finish. Returns whether they did.
  bool drain(std::chrono::milliseconds grace);
  /// Stops the worker after the running job; queued jobs are answered
  /// SHUTTING_DOWN.
  void stop();

  /// The most jobs that may wait behind the running one (--queue).
  std::size_t queue_capacity() const;
  const std::string& backend_name() const;
  const std::string& device_name() const;

  struct State;  ///< the implementation's (public for its observers)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace mold_cli
