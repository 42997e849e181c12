#include "calibrate_phase.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

// Solves the n x n system a x = b (Gaussian elimination with partial
// pivoting); false when it is singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b,
           std::vector<double>& x) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    if (std::abs(a[pivot][col]) < 1e-12) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = a[r][col] / a[col][col];
      for (std::size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  x.assign(n, 0);
  for (std::size_t i = n; i-- > 0;) {
    double sum = b[i];
    for (std::size_t c = i + 1; c < n; ++c) sum -= a[i][c] * x[c];
    x[i] = sum / a[i][i];
  }
  return true;
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
  options.dtype = "float32";
  options.backend = "cpu";
  const std::shared_ptr<mold::Backend> backend =
      host.registry->create_backend("cpu");
  const std::unique_ptr<mold::Pipeline> pipeline =
      family.make_pipeline(options);
  mold::ModelCache cache(backend, host.config.cache);
  mold::Runner runner(*pipeline, cache, *host.registry);

  PhaseRecorder recorder(calibration.op);
  runner.add_observer(&recorder);
  std::vector<PhasePoint> points;
  const std::vector<int> image_counts =
      calibration.images.empty() ? std::vector<int>{0} : calibration.images;
  for (const int size : calibration.sizes) {
    for (const int words : calibration.tokens) {
      for (const int count : image_counts) {
        recorder.reset();
        mold::GenerateRequest request;
        request.prompt = prompt_of(words);
        request.width = request.height = size;
        request.steps = 2;  // the phases are the same; some schedules need 2
        // Source images: square gradients of the run's size.
        for (int i = 0; i < count; ++i)
          request.images.push_back(
              (at::arange(size * size * 3, at::kLong).remainder(251) + i * 7)
                  .remainder(256)
                  .to(at::kByte)
                  .view({3, size, size}));
        runner.run(request,
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
        p.peak = e.after.peak_allocated > e.before.allocated
                     ? e.after.peak_allocated - e.before.allocated
                     : 0;
        p.estimate = e.estimate.bytes;
        for (const auto& term : e.estimate.terms)
          if (!term.constant.empty())
            p.bases.emplace_back(term.constant, term.basis);
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
  return points;
}

ConstantFit fit_constants(const std::vector<PhasePoint>& points) {
  if (points.empty()) throw mold::Error("no points to fit");
  std::vector<std::string> names;
  for (const auto& [name, basis] : points.front().bases) names.push_back(name);
  for (const auto& p : points)
    if (p.bases.size() != names.size())
      throw mold::Error("the points' estimates have different terms");
  const std::size_t n = names.size();
  // More points than constants, so that the fit is tested by a point it did
  // not have to pass through.
  if (points.size() <= n)
    throw mold::Error(fmt::format(
        "{} points cannot test a fit of {} constants: measure at least {} "
        "(each size with each prompt length)",
        points.size(), n, n + 1));
  // Rows scaled by 1/measured: the squared relative error.
  auto row = [&](const PhasePoint& p, std::size_t i) {
    return p.bases[i].second / double(std::max<mold::Bytes>(p.peak, 1));
  };
  // Every subset of the constants held at zero; the best non-negative
  // solution (an exact non-negative least squares for three constants).
  std::optional<std::vector<double>> best;
  double best_error = 0;
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<std::size_t> free;
    for (std::size_t i = 0; i < n; ++i)
      if (mask & (1u << i)) free.push_back(i);
    std::vector<std::vector<double>> a(free.size(),
                                       std::vector<double>(free.size(), 0));
    std::vector<double> b(free.size(), 0);
    for (const auto& p : points)
      for (std::size_t r = 0; r < free.size(); ++r) {
        for (std::size_t c = 0; c < free.size(); ++c)
          a[r][c] += row(p, free[r]) * row(p, free[c]);
        b[r] += row(p, free[r]);  // the target is 1 (measured/measured)
      }
    std::vector<double> x;
    if (!solve(a, b, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; }))
      continue;
    std::vector<double> all(n, 0);
    for (std::size_t k = 0; k < free.size(); ++k) all[free[k]] = x[k];
    double error = 0;
    for (const auto& p : points) {
      double fit = 0;
      for (std::size_t i = 0; i < n; ++i) fit += all[i] * row(p, i);
      error += (fit - 1) * (fit - 1);
    }
    if (!best || error < best_error) {
      best = all;
      best_error = error;
    }
  }
  if (!best)
    throw mold::Error(
        fmt::format("{} points do not decide the constants; measure more "
                    "sizes or prompt lengths",
                    points.size()));
  ConstantFit fit;
  for (std::size_t i = 0; i < n; ++i)
    fit.constants.emplace_back(names[i], (*best)[i]);
  double scale = 0;
  for (const auto& p : points)
    scale = std::max(scale, double(p.peak) / fitted_bytes(fit, p));
  if (!(scale > 0) || !std::isfinite(scale))
    throw mold::Error("the measured peaks are all 0: nothing to fit");
  for (auto& [name, value] : fit.constants) value *= scale;
  fit.scale = scale;
  return fit;
}

double fitted_bytes(const ConstantFit& fit, const PhasePoint& point) {
  double bytes = 0;
  for (std::size_t i = 0; i < fit.constants.size(); ++i)
    bytes += fit.constants[i].second * point.bases[i].second;
  return bytes;
}

}  // namespace molddiag
