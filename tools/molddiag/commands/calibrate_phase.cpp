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
  if (!calibration.model_dir.empty())
    options.model_dir = std::filesystem::path(calibration.model_dir);
  options.backend = "cpu";
  const std::shared_ptr<mold::Backend> backend =
      host.registry->create_backend("cpu");
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
          p.dtype = dtype;
          p.weights = calibration.model_dir.empty()
                          ? calibration.arch
                          : std::filesystem::path(calibration.model_dir)
                                .lexically_normal()
                                .filename()
                                .string();
          if (p.weights.empty()) p.weights = calibration.model_dir;
          p.peak = e.after.peak_allocated > e.before.allocated
                       ? e.after.peak_allocated - e.before.allocated
                       : 0;
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

bool is_stage_factor(const std::string& name) {
  const std::string suffix = "_factor";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct StageFit {
  std::vector<double> factor;
  std::vector<std::size_t> owner;  ///< per point: its largest stage
};

// Factors for the stages `stage` of bases so that, per point, the largest
// stage covers peak - fixed: start with every factor 1 (the count as it is),
// then alternate: each point to the stage that is largest with the factors;
// each factor to the largest ratio of its points.
StageFit fit_factors(const std::vector<PhasePoint>& points,
                     const std::vector<std::size_t>& stage,
                     const std::vector<double>& target) {
  StageFit fit;
  fit.factor.assign(stage.size(), 1.0);
  fit.owner.assign(points.size(), stage.size());
  for (int round = 0; round < 50; ++round) {
    bool moved = false;
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::size_t best = 0;
      for (std::size_t s = 1; s < stage.size(); ++s)
        if (fit.factor[s] * points[i].bases[stage[s]].second >
            fit.factor[best] * points[i].bases[stage[best]].second)
          best = s;
      moved = moved || fit.owner[i] != best;
      fit.owner[i] = best;
    }
    if (!moved && round > 0) break;
    for (std::size_t s = 0; s < stage.size(); ++s) {
      double f = 0;
      for (std::size_t i = 0; i < points.size(); ++i)
        if (fit.owner[i] == s)
          f = std::max(f, target[i] / points[i].bases[stage[s]].second);
      if (f > 0) fit.factor[s] = f;
    }
  }
  return fit;
}

ConstantFit fit_stage_factors(const std::vector<PhasePoint>& points,
                              const std::vector<std::string>& names) {
  std::vector<std::size_t> stage;
  std::optional<std::size_t> fixed;
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (is_stage_factor(names[k]))
      stage.push_back(k);
    else if (names[k] == "fixed_bytes")
      fixed = k;
    else
      throw mold::Error(fmt::format(
          "the estimate has stage factors and '{}': molddiag calibrate fits "
          "stage factors with fixed_bytes only",
          names[k]));
  }
  for (const auto& p : points)
    for (const std::size_t k : stage)
      if (!(p.bases[k].second > 0))
        throw mold::Error(
            fmt::format("the {} count of a point is {}: "
                        "nothing to fit",
                        names[k], p.bases[k].second));
  auto fixed_basis = [&](const PhasePoint& p) {
    return fixed ? p.bases[*fixed].second : 0.0;
  };
  // The fixed bytes: the value of a grid (0, then up to 90% of the
  // smallest peak per batch item) whose fit is nearest the points in
  // squared relative error; the factors cover the rest.
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& p : points)
    if (fixed_basis(p) > 0)
      smallest = std::min(smallest, double(fitted_peak(p)) / fixed_basis(p));
  std::vector<double> candidates{0};
  if (fixed && std::isfinite(smallest) && smallest > 1)
    for (int g = 0; g <= 80; ++g)
      candidates.push_back(smallest * 0.9 * std::pow(1e-4, 1 - g / 80.0));
  std::optional<std::pair<double, StageFit>> best;
  double best_error = 0;
  for (const double constant : candidates) {
    std::vector<double> target;
    for (const auto& p : points)
      target.push_back(
          std::max(1.0, double(fitted_peak(p)) - constant * fixed_basis(p)));
    StageFit fit = fit_factors(points, stage, target);
    double error = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const std::size_t s = fit.owner[i];
      const double bytes = fit.factor[s] * points[i].bases[stage[s]].second +
                           constant * fixed_basis(points[i]);
      const double r =
          bytes / double(std::max<mold::Bytes>(fitted_peak(points[i]), 1));
      error += (r - 1) * (r - 1);
    }
    if (!best || error < best_error) {
      best.emplace(constant, std::move(fit));
      best_error = error;
    }
  }
  const auto& [constant, fit] = *best;
  ConstantFit out;
  out.staged = true;
  std::vector<double> factor = fit.factor;
  // A stage that is the largest nowhere was not measured: it gets the
  // largest factor the measured stages needed (the count is checked
  // against the code the same way), lowered where that would take a
  // measured point over.
  double measured = 0;
  for (std::size_t s = 0; s < stage.size(); ++s)
    if (std::find(fit.owner.begin(), fit.owner.end(), s) != fit.owner.end())
      measured = std::max(measured, factor[s]);
  for (std::size_t s = 0; s < stage.size(); ++s) {
    if (std::find(fit.owner.begin(), fit.owner.end(), s) != fit.owner.end())
      continue;
    double f = measured;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const std::size_t o = fit.owner[i];
      f = std::min(f, factor[o] * points[i].bases[stage[o]].second /
                          points[i].bases[stage[s]].second);
    }
    factor[s] = f;
    out.never_largest.push_back(names[stage[s]]);
  }
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto at = std::find(stage.begin(), stage.end(), k);
    out.constants.emplace_back(
        names[k],
        at != stage.end() ? factor[std::size_t(at - stage.begin())] : constant);
  }
  return out;
}

}  // namespace

ConstantFit fit_constants(const std::vector<PhasePoint>& points) {
  if (points.empty()) throw mold::Error("no points to fit");
  std::vector<std::string> names;
  for (const auto& [name, basis] : points.front().bases) names.push_back(name);
  for (const auto& p : points)
    if (p.bases.size() != names.size())
      throw mold::Error("the points' estimates have different terms");
  const std::size_t n = names.size();
  if (std::any_of(names.begin(), names.end(), is_stage_factor))
    return fit_stage_factors(points, names);
  // More points than constants, so that the fit is tested by a point it did
  // not have to pass through.
  if (points.size() <= n)
    throw mold::Error(fmt::format(
        "{} points cannot test a fit of {} constants: measure at least {} "
        "(each size with each prompt length)",
        points.size(), n, n + 1));
  // Rows scaled by 1/measured: the squared relative error.
  auto row = [&](const PhasePoint& p, std::size_t i) {
    return p.bases[i].second / double(std::max<mold::Bytes>(fitted_peak(p), 1));
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
    scale = std::max(scale, double(fitted_peak(p)) / fitted_bytes(fit, p));
  if (!(scale > 0) || !std::isfinite(scale))
    throw mold::Error("the measured peaks are all 0: nothing to fit");
  for (auto& [name, value] : fit.constants) value *= scale;
  fit.scale = scale;
  return fit;
}

double fitted_bytes(const ConstantFit& fit, const PhasePoint& point) {
  double bytes = 0;
  double largest_stage = 0;
  for (std::size_t i = 0; i < fit.constants.size(); ++i) {
    const double term = fit.constants[i].second * point.bases[i].second;
    if (fit.staged && is_stage_factor(fit.constants[i].first))
      largest_stage = std::max(largest_stage, term);
    else
      bytes += term;
  }
  return bytes + largest_stage;
}

}  // namespace molddiag
