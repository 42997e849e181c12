#include "calibrate_phase.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <mold/base/error.hpp>
#include <mold/base/memory_stats.hpp>
#include <mold/cache/cache.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/observer.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/runner.hpp>
#include <optional>

#include "common/family_lookup.hpp"

namespace molddiag {

namespace tools = mold::tools;

namespace {

/// Keeps the first done event of one op, with the process's resident peak
/// during it.
class PhaseRecorder final : public mold::RunObserver {
 public:
  explicit PhaseRecorder(std::string op) : op_(std::move(op)) {}

  void on_phase(const mold::PhaseEvent& event) override {
    if (event.phase != op_ || done_) return;
    if (event.stage == mold::PhaseStage::start) {
      rss_before_ = mold::read_host_rss();
      rss_known_ = mold::reset_host_peak_rss();
    } else if (event.stage == mold::PhaseStage::done) {
      const mold::Bytes peak = mold::read_host_peak_rss();
      rss_peak_ = rss_known_ && peak > rss_before_ ? peak - rss_before_ : 0;
      done_ = event;
    }
  }

  const std::optional<mold::PhaseEvent>& done() const { return done_; }
  void reset() {
    done_.reset();
    rss_peak_ = 0;
  }
  mold::Bytes rss_peak() const { return rss_peak_; }

 private:
  std::string op_;
  std::optional<mold::PhaseEvent> done_;
  mold::Bytes rss_before_ = 0, rss_peak_ = 0;
  bool rss_known_ = false;
};

/// A prompt of `n` words that the Qwen tokenizer makes one token each.
std::string prompt_of(int words) {
  std::string text;
  for (int i = 0; i < words; ++i) text += i ? " a" : "a";
  return text;
}

}  // namespace

std::vector<PhasePoint> measure_phase(
    const tools::Host& host, const PhaseCalibration& calibration,
    const std::function<void(const PhasePoint&)>& on_point) {
  const mold::ModelFamily& family =
      tools::require_family(*host.registry, calibration.family);
  if (!family.make_pipeline || family.models.empty())
    throw mold::NotFound(fmt::format(
        "family '{}' cannot run its pipeline in this build, so it cannot "
        "measure {}",
        family.name, calibration.op));
  const mold::ModelInfo* found = &family.models.front();
  if (!calibration.model.empty()) {
    found = nullptr;
    for (const auto& m : family.models)
      if (m.name == calibration.model) found = &m;
    if (!found)
      throw mold::NotFound(fmt::format("family '{}' has no model '{}'",
                                       family.name, calibration.model));
  }
  const mold::ModelInfo& model = *found;
  mold::PipelineOptions options;
  options.model = model.name;
  options.variant = model.default_variant;
  options.arch = mold::ArchSpec::parse(calibration.arch);
  if (!calibration.model_dir.empty())
    options.model_dir = std::filesystem::path(calibration.model_dir);
  options.backend = calibration.backend;
  const std::shared_ptr<mold::Backend> backend =
      host.registry->create_backend(calibration.backend);
  PhaseRecorder recorder(calibration.op);
  std::vector<PhasePoint> points;
  const std::vector<int> image_counts =
      calibration.images.empty() ? std::vector<int>{0} : calibration.images;
  for (const std::string& dtype : calibration.dtypes) {
    // One pipeline per dtype: its components are loaded in it.
    options.dtype = dtype;
    const std::unique_ptr<mold::Pipeline> pipeline =
        family.make_pipeline(options);
    mold::ModelCache cache(backend, host.config.cache);
    mold::Runner runner(*pipeline, cache, *host.registry);
    // Recorded, not learned: calibrate measures the tables themselves.
    runner.set_history(tools::open_history(host, *backend),
                       "molddiag calibrate", false);
    runner.add_observer(&recorder);
    for (const int size : calibration.sizes) {
      for (const int words : calibration.tokens) {
        for (const int count : image_counts) {
          recorder.reset();
          mold::GenerateRequest request;
          request.prompt = prompt_of(words);
          request.width = request.height = size;
          request.steps = calibration.steps;
          // Source images: square gradients of the run's size.
          for (int i = 0; i < count; ++i)
            request.images.push_back(
                (at::arange(size * size * 3, at::kLong).remainder(251) + i * 7)
                    .remainder(256)
                    .to(at::kByte)
                    .view({3, size, size}));
          runner.run(pipeline->resolve_request(request),
                     [](mold::ImageRecord&, const mold::GeneratedImage&) {});
          if (!recorder.done())
            throw mold::Error(fmt::format(
                "the {} pipeline ran no {} phase: nothing to calibrate",
                family.name, calibration.op));
          const mold::PhaseEvent& e = *recorder.done();
          PhasePoint p;
          p.size = size;
          p.words = words;
          p.tokens = e.workload.tokens;
          p.images = count;
          p.dtype = dtype;
          p.weights = calibration.model_dir.empty()
                          ? calibration.arch
                          : std::filesystem::path(calibration.model_dir)
                                .lexically_normal()
                                .filename()
                                .string();
          if (p.weights.empty()) p.weights = calibration.model_dir;
          p.peak = mold::working_peak(e.before, e.after);
          p.estimate = e.estimate.bytes;
          p.threads = e.workload.threads;
          for (const auto& term : e.estimate.terms) {
            if (!term.constant.empty())
              p.bases.emplace_back(term.constant, term.basis);
            if (term.name == "threads") p.thread_bytes = term.bytes;
            if (term.name == "dequantized_weights") p.weight_bytes = term.bytes;
          }
          p.seconds = e.seconds;
          p.rss_peak = recorder.rss_peak();
          if (p.bases.empty())
            throw mold::Error(fmt::format(
                "the {} estimate of {} names no constants ({}): molddiag "
                "calibrate fits only estimates of per-token tables",
                calibration.op, family.name, e.estimate.source));
          points.push_back(std::move(p));
          if (on_point) on_point(points.back());
        }
      }
    }
  }
  return points;
}

namespace {

mold::FitPoint fit_point(const PhasePoint& p) {
  return {p.bases, double(fitted_peak(p))};
}

}  // namespace

mold::ConstantFit fit_constants(const std::vector<PhasePoint>& points) {
  std::vector<mold::FitPoint> fit_points;
  for (const auto& p : points) fit_points.push_back(fit_point(p));
  return mold::fit_constants(fit_points);
}

double fitted_bytes(const mold::ConstantFit& fit, const PhasePoint& point) {
  return mold::fitted_bytes(fit, point.bases);
}

}  // namespace molddiag
