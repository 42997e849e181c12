#pragma once
/// What mold serve exposes at GET /metrics, in Prometheus' text format, kept
/// with prometheus-cpp's core library (its own HTTP server is not used: Beast
/// serves the text). Names follow Prometheus' conventions: the `mold_`
/// prefix, base units in the name (`_bytes`, `_seconds`), `_total` for
/// counters. Thread-safe.

#include <cstdint>
#include <memory>
#include <mold/base/memory_stats.hpp>
#include <string>
#include <string_view>

namespace mold::net {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  /// A finished HTTP request. `route` is the route's pattern ("/api/status",
  /// "other" for unknown paths), never the raw path: labels stay bounded.
  void observe_request(std::string_view route, std::string_view method,
                       int status, double seconds);
  /// A phase of a generation that ended (done or failed).
  void observe_phase(std::string_view phase, std::string_view status,
                     double seconds);
  /// A generation request that ended: "ok", "oom", "error", "rejected",
  /// "cancelled" (its client went away), "batch_failed" (another image of
  /// its request failed first).
  void count_generation(std::string_view outcome);
  /// An out-of-memory error on `backend` ("cuda", "cpu", ...).
  void count_oom(std::string_view backend);
  /// A request refused before it ran: QUEUE_FULL, INSUFFICIENT_MEMORY, ...
  void count_rejection(std::string_view code);
  /// A job whose client went away: "queued" (withdrawn, its slot freed) or
  /// "running" (stopped at its next phase or step).
  void count_client_gone(std::string_view when);
  void count_park(std::string_view component);
  void count_load(std::string_view component);

  /// Exports the counters a dashboard alerts on at 0 before their first
  /// event: mold_ooms_total for `backend`, mold_rejections_total for
  /// QUEUE_FULL, INSUFFICIENT_MEMORY and NEVER_FITS, mold_generations_total
  /// for every outcome, mold_client_gone_total for both whens (a rate() over a
  /// series that appears only at its first event misses that event).
  void export_zeros(std::string_view backend);

  void set_queue(std::size_t depth, std::size_t capacity, bool busy);
  void set_models_loaded(std::size_t models);
  /// The device's memory now (the backend's counters), the host's RSS.
  void set_memory(std::string_view backend, const MemoryStats& stats);

  /// Prometheus' text exposition format (version 0.0.4).
  std::string serialize() const;
  static constexpr const char* kContentType =
      "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mold::net
