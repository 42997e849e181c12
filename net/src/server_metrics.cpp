#include "mold/net/server_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>

namespace mold::net {

namespace p = prometheus;

namespace {

/// Seconds: 1 ms to ~17 min, doubling (HTTP answers and device phases).
p::Histogram::BucketBoundaries seconds_buckets() {
  p::Histogram::BucketBoundaries b;
  for (double s = 0.001; s < 1100; s *= 2) b.push_back(s);
  return b;
}

}  // namespace

struct ServerMetrics::State {
  std::shared_ptr<p::Registry> registry = std::make_shared<p::Registry>();
  // prometheus-cpp's Family::Add is thread-safe; the mutex guards the
  // multi-metric updates (memory gauges) so a scrape sees one snapshot.
  std::mutex mutex;
  p::Family<p::Counter>& requests =
      p::BuildCounter()
          .Name("mold_http_requests_total")
          .Help("HTTP requests answered, by route, method and status")
          .Register(*registry);
  p::Family<p::Histogram>& request_seconds =
      p::BuildHistogram()
          .Name("mold_http_request_duration_seconds")
          .Help("Time from a request's last byte to its answer's, by route")
          .Register(*registry);
  p::Family<p::Histogram>& phase_seconds =
      p::BuildHistogram()
          .Name("mold_phase_duration_seconds")
          .Help("Duration of each generation phase, by phase and status")
          .Register(*registry);
  p::Family<p::Counter>& generations =
      p::BuildCounter()
          .Name("mold_generations_total")
          .Help("Generation requests that ended, by outcome")
          .Register(*registry);
  p::Family<p::Counter>& ooms = p::BuildCounter()
                                    .Name("mold_ooms_total")
                                    .Help("Out-of-memory errors, by backend")
                                    .Register(*registry);
  p::Family<p::Counter>& rejections =
      p::BuildCounter()
          .Name("mold_rejections_total")
          .Help("Requests refused before running, by error code")
          .Register(*registry);
  p::Family<p::Counter>& client_gone =
      p::BuildCounter()
          .Name("mold_client_gone_total")
          .Help(
              "Generation jobs whose client went away, by when: queued (its "
              "slot freed at once) or running (stopped at its next phase or "
              "step)")
          .Register(*registry);
  p::Family<p::Counter>& parks =
      p::BuildCounter()
          .Name("mold_cache_parks_total")
          .Help("Components the model cache parked to make room, by component")
          .Register(*registry);
  p::Family<p::Counter>& loads =
      p::BuildCounter()
          .Name("mold_cache_loads_total")
          .Help("Components loaded onto the device, by component")
          .Register(*registry);
  p::Family<p::Gauge>& queue_depth_family =
      p::BuildGauge()
          .Name("mold_queue_depth")
          .Help("Generation requests waiting for the device")
          .Register(*registry);
  p::Gauge& queue_depth = queue_depth_family.Add({});
  p::Gauge& queue_capacity =
      p::BuildGauge()
          .Name("mold_queue_capacity")
          .Help("Generation requests that may wait (mold serve --queue)")
          .Register(*registry)
          .Add({});
  p::Gauge& busy = p::BuildGauge()
                       .Name("mold_busy")
                       .Help("1 while a generation runs on the device")
                       .Register(*registry)
                       .Add({});
  p::Gauge& models_loaded =
      p::BuildGauge()
          .Name("mold_models_loaded")
          .Help("Models the server holds (pipelines built)")
          .Register(*registry)
          .Add({});
  p::Family<p::Gauge>& device_total =
      p::BuildGauge()
          .Name("mold_device_total_bytes")
          .Help("Device memory capacity (or the configured limit)")
          .Register(*registry);
  p::Family<p::Gauge>& device_free =
      p::BuildGauge()
          .Name("mold_device_free_bytes")
          .Help("Device memory a new allocation can still get")
          .Register(*registry);
  p::Family<p::Gauge>& device_used =
      p::BuildGauge()
          .Name("mold_device_used_bytes")
          .Help("Device memory in use by every process (total - free)")
          .Register(*registry);
  p::Family<p::Gauge>& allocated = p::BuildGauge()
                                       .Name("mold_allocated_bytes")
                                       .Help("Bytes in live tensors")
                                       .Register(*registry);
  p::Family<p::Gauge>& reserved =
      p::BuildGauge()
          .Name("mold_reserved_bytes")
          .Help("Bytes the allocator holds, live or cached")
          .Register(*registry);
  p::Gauge& host_rss = p::BuildGauge()
                           .Name("mold_host_rss_bytes")
                           .Help("Resident set size of the server process")
                           .Register(*registry)
                           .Add({});
};

ServerMetrics::ServerMetrics() : state_(std::make_unique<State>()) {}
ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_request(std::string_view route,
                                    std::string_view method, int status,
                                    double seconds) {
  state_->requests
      .Add({{"route", std::string(route)},
            {"method", std::string(method)},
            {"status", std::to_string(status)}})
      .Increment();
  state_->request_seconds
      .Add({{"route", std::string(route)}}, seconds_buckets())
      .Observe(seconds);
}

void ServerMetrics::observe_phase(std::string_view phase,
                                  std::string_view status, double seconds) {
  state_->phase_seconds
      .Add({{"phase", std::string(phase)}, {"status", std::string(status)}},
           seconds_buckets())
      .Observe(seconds);
}

void ServerMetrics::count_generation(std::string_view outcome) {
  state_->generations.Add({{"outcome", std::string(outcome)}}).Increment();
}
void ServerMetrics::count_oom(std::string_view backend) {
  state_->ooms.Add({{"backend", std::string(backend)}}).Increment();
}
void ServerMetrics::count_rejection(std::string_view code) {
  state_->rejections.Add({{"code", std::string(code)}}).Increment();
}
void ServerMetrics::count_client_gone(std::string_view when) {
  state_->client_gone.Add({{"when", std::string(when)}}).Increment();
}
void ServerMetrics::count_park(std::string_view component) {
  state_->parks.Add({{"component", std::string(component)}}).Increment();
}
void ServerMetrics::count_load(std::string_view component) {
  const p::Labels labels = {{"component", std::string(component)}};
  state_->loads.Add(labels).Increment();
  state_->parks.Add(labels);  // at 0 from its first load: rate() sees a park
}

void ServerMetrics::export_zeros(std::string_view backend) {
  state_->ooms.Add({{"backend", std::string(backend)}});
  for (const char* code : {"QUEUE_FULL", "INSUFFICIENT_MEMORY", "NEVER_FITS"})
    state_->rejections.Add({{"code", code}});
  for (const char* outcome :
       {"ok", "oom", "error", "rejected", "cancelled", "batch_failed"})
    state_->generations.Add({{"outcome", outcome}});
  for (const char* when : {"queued", "running"})
    state_->client_gone.Add({{"when", when}});
}

void ServerMetrics::set_queue(std::size_t depth, std::size_t capacity,
                              bool busy) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->queue_depth.Set(double(depth));
  state_->queue_capacity.Set(double(capacity));
  state_->busy.Set(busy ? 1 : 0);
}

void ServerMetrics::set_models_loaded(std::size_t models) {
  state_->models_loaded.Set(double(models));
}

void ServerMetrics::set_memory(std::string_view backend,
                               const MemoryStats& stats) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const p::Labels labels = {{"backend", std::string(backend)}};
  state_->device_total.Add(labels).Set(double(stats.total));
  state_->device_free.Add(labels).Set(double(stats.free));
  state_->device_used.Add(labels).Set(double(stats.device_used));
  state_->allocated.Add(labels).Set(double(stats.allocated));
  state_->reserved.Add(labels).Set(double(stats.reserved));
  state_->host_rss.Set(double(stats.host_rss));
}

std::string ServerMetrics::serialize() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return p::TextSerializer().Serialize(state_->registry->Collect());
}

}  // namespace mold::net
