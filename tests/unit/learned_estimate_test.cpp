// Learned estimates on a synthetic op whose true working memory is known:
// a table made wrong (half, double) converges into [1.00, 1.10] of the
// measured peaks within 5 runs of distinct shapes, is never below a peak
// measured for the same workload, and one disturbed run does not raise the
// others. The constant fit itself is checked on exact and noisy points.
#include <catch2/catch.hpp>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/estimate/constant_fit.hpp>
#include <mold/history/learned_estimate.hpp>
#include <vector>

using mold::Bytes;
using mold::Estimate;
using mold::MeasuredPhase;
using mold::Workload;

namespace {

// The truth: bytes = 48 B per token-width + 3 B per score + 20 kB.
constexpr double kPerToken = 48, kPerScore = 3, kFixed = 20000;
constexpr double kWidth = 64;

Workload workload(int tokens, int threads = 1) {
  Workload w;
  w.family = "fake";
  w.model = "fake-model";
  w.op = "denoise";
  w.backend = "cpu";
  w.dtype = "float32";
  w.height = w.width = 64;
  w.tokens = tokens;
  w.threads = threads;
  return w;
}

double truth(const Workload& w) {
  const double t = w.tokens;
  return kPerToken * t * kWidth + kPerScore * t * t + kFixed;
}

/// A table shaped like the truth with every constant times `wrong`, 5%
/// headroom, and 1 MB of threads' scratch per thread past the first.
Estimate table(const Workload& w, double wrong, bool calibrated = true) {
  Estimate e;
  const double t = w.tokens;
  auto add = [&](const char* name, const char* constant, double c,
                 double basis) {
    e.terms.emplace_back(name, Bytes(std::llround(c * wrong * basis)), "",
                         constant, basis);
  };
  add("activations", "bytes_per_token", kPerToken, t * kWidth);
  add("attention", "bytes_per_score", kPerScore, t * t);
  add("fixed", "fixed_bytes", kFixed, 1);
  Bytes fitted = 0;
  for (const auto& term : e.terms) fitted += term.bytes;
  e.terms.emplace_back("headroom", Bytes(std::llround(fitted * 0.05)), "");
  if (w.threads > 1) {
    e.terms.emplace_back("threads", Bytes(1000000) * Bytes(w.threads - 1), "");
    e.terms.back().counted = true;
  }
  for (const auto& term : e.terms) e.bytes += term.bytes;
  e.calibrated = calibrated;
  e.source = "fake.toml [denoise.cpu]";
  return e;
}

/// A run of `w` that measured `peak` (its estimate's bases, as the
/// runtime records them).
MeasuredPhase run(const Workload& w, double peak, double wrong) {
  MeasuredPhase p;
  p.workload = w;
  p.peak = Bytes(std::llround(peak));
  for (const auto& term : table(w, wrong).terms) {
    if (term.counted) p.unfitted += term.bytes;
    if (!term.constant.empty()) p.bases.emplace_back(term.constant, term.basis);
  }
  return p;
}

Estimate learned(const Workload& w, const std::vector<MeasuredPhase>& history,
                 double wrong, bool calibrated = true) {
  return mold::learned_estimate(
      table(w, wrong, calibrated), w, history,
      [&](const Workload& x) { return table(x, wrong, calibrated); },
      "Fake CPU");
}

}  // namespace

TEST_CASE(
    "constant fit: exact points give the constants back, and an "
    "outlier is left out",
    "[learned]") {
  std::vector<mold::FitPoint> points;
  for (const int t : {100, 200, 300, 400, 500}) {
    const Workload w = workload(t);
    points.push_back({{{"bytes_per_token", t * kWidth},
                       {"bytes_per_score", double(t) * t},
                       {"fixed_bytes", 1.0}},
                      truth(w)});
  }
  const auto fit = mold::fit_constants(points);
  REQUIRE(fit.constants.size() == 3);
  CHECK(fit.constants[0].second == Approx(kPerToken).epsilon(1e-6));
  CHECK(fit.constants[1].second == Approx(kPerScore).epsilon(1e-6));
  CHECK(fit.constants[2].second == Approx(kFixed).epsilon(1e-4));
  CHECK(fit.scale == Approx(1).epsilon(1e-9));
  auto disturbed = points;
  disturbed[2].target *= 3;
  const auto robust = mold::fit_constants(disturbed, mold::FitOptions{1.5});
  CHECK(robust.outliers == std::vector<std::size_t>{2});
  CHECK(robust.constants[0].second == Approx(kPerToken).epsilon(1e-6));
  // Without the option, the fit covers the outlier too.
  const auto covering = mold::fit_constants(disturbed);
  CHECK(covering.scale > 1.5);
  // Too few points to test a fit of three constants.
  CHECK_THROWS_AS(mold::fit_constants({points[0], points[1], points[2]}),
                  mold::Error);
}

TEST_CASE(
    "learned estimates: a table made wrong converges within 5 runs of "
    "distinct shapes, never below a measured peak",
    "[learned]") {
  const double wrong = GENERATE(0.5, 2.0);
  INFO("table constants x" << wrong);
  // Distinct shapes, each measured once, with up to 2% of noise.
  const std::vector<int> shapes = {120, 480, 300, 200, 400};
  const std::vector<double> noise = {1.0, 0.99, 1.02, 1.0, 0.985};
  std::vector<MeasuredPhase> history;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Workload w = workload(shapes[i]);
    const double peak = truth(w) * noise[i];
    history.push_back(run(w, peak, wrong));
    // After its first run, a workload is never estimated below its peak.
    const Estimate again = learned(w, history, wrong);
    CHECK(double(again.bytes) >= peak);
    CHECK(again.learned_runs == history.size());
  }
  // The 6th shape, inside the measured sizes: within [1.00, 1.10].
  for (const int tokens : {250, 350, 150}) {
    const Workload w = workload(tokens);
    const Estimate e = learned(w, history, wrong);
    INFO(e.source);
    CHECK(e.origin == "learned");
    CHECK(double(e.bytes) / truth(w) >= 1.0);
    CHECK(double(e.bytes) / truth(w) <= 1.10);
    CHECK_THAT(e.source, Catch::StartsWith("learned (5 runs on Fake CPU: "
                                           "constants fitted to 5 shapes"));
  }
  // Beyond the measured sizes the calibrated table stays a floor.
  const Workload large = workload(2000);
  const Estimate beyond = learned(large, history, wrong);
  CHECK(double(beyond.bytes) >= double(table(large, wrong).bytes) - 1);
  CHECK(double(beyond.bytes) >= truth(large));
}

TEST_CASE(
    "learned estimates: before enough shapes, a too-small table is "
    "raised by what was measured; an uncalibrated one is replaced",
    "[learned]") {
  std::vector<MeasuredPhase> history;
  history.push_back(run(workload(300), truth(workload(300)), 0.5));
  const Workload next = workload(200);
  const Estimate raised = learned(next, history, 0.5);
  CHECK(raised.origin == "table, raised by history");
  CHECK(double(raised.bytes) / truth(next) >= 1.0);
  CHECK(double(raised.bytes) / truth(next) <= 1.10);
  CHECK_THAT(raised.source, Catch::Contains("1 run on Fake CPU"));
  // Each scaled term says so; the bases stay.
  CHECK_THAT(raised.terms[0].detail, Catch::Contains("(learned)"));
  CHECK(raised.terms[0].basis == Approx(200 * kWidth));
  // A table twice too large and calibrated stays, before the fit.
  std::vector<MeasuredPhase> doubled{
      run(workload(300), truth(workload(300)), 2.0)};
  CHECK(learned(next, doubled, 2.0).origin == "table");
  // Not calibrated for this backend: the history replaces it.
  const Estimate replaced = learned(next, doubled, 2.0, false);
  CHECK(replaced.origin == "learned");
  CHECK(double(replaced.bytes) / truth(next) <= 1.10);
  // No history: the table as it is.
  const Estimate none = learned(next, {}, 0.5);
  CHECK(none.origin == "table");
  CHECK(none.bytes == table(next, 0.5).bytes);
}

TEST_CASE("learned estimates: one disturbed run raises only its own workload",
          "[learned]") {
  std::vector<MeasuredPhase> history;
  for (const int tokens : {120, 480, 300, 200, 400})
    history.push_back(run(workload(tokens), truth(workload(tokens)), 1.0));
  const Workload probe = workload(250);
  const Estimate before = learned(probe, history, 1.0);
  const Workload disturbed = workload(350);
  history.push_back(run(disturbed, 3 * truth(disturbed), 1.0));
  const Estimate after = learned(probe, history, 1.0);
  CHECK(double(after.bytes) <= 1.10 * double(before.bytes));
  CHECK_THAT(after.source, Catch::Contains("1 outlier left out"));
  // Its own workload is floored by what it measured.
  const Estimate own = learned(disturbed, history, 1.0);
  CHECK(double(own.bytes) >= 3 * truth(disturbed) - 1);
  CHECK(own.terms.back().name == "measured floor");
  // Before the fit, the scale leaves it out once three shapes are known.
  std::vector<MeasuredPhase> few;
  for (const int tokens : {120, 300})
    few.push_back(run(workload(tokens), truth(workload(tokens)), 0.5));
  const Estimate few_before = learned(probe, few, 0.5);
  few.push_back(run(disturbed, 3 * truth(disturbed), 0.5));
  const Estimate few_after = learned(probe, few, 0.5);
  CHECK(double(few_after.bytes) <= 1.10 * double(few_before.bytes));
}

TEST_CASE(
    "learned estimates: a failed allocation floors its workload; the "
    "threads' scratch is not learned; other models teach nothing",
    "[learned]") {
  std::vector<MeasuredPhase> history;
  const Workload w = workload(300, 3);
  MeasuredPhase failed = run(w, 50e6, 1.0);
  failed.lower_bound = true;
  history.push_back(failed);
  const Estimate floored = learned(w, history, 1.0);
  CHECK(floored.bytes >= Bytes(50000000));
  CHECK_THAT(floored.terms.back().detail,
             Catch::Contains("an allocation that failed"));
  // Runs with 3 threads: the fit sees the peak less the 2 MB counted.
  history.clear();
  for (const int tokens : {120, 480, 300, 200, 400}) {
    const Workload t = workload(tokens, 3);
    history.push_back(run(t, truth(t) + 2e6, 1.0));
  }
  const Workload probe = workload(250, 1);
  const Estimate one_thread = learned(probe, history, 1.0);
  CHECK(double(one_thread.bytes) / truth(probe) <= 1.10);
  CHECK(double(one_thread.bytes) / truth(probe) >= 1.0);
  // phases_like is what the runtime passes: another model's runs are not.
  Workload other = probe;
  other.model = "other-model";
  CHECK_FALSE(mold::learns_from(other, probe));
  CHECK(mold::learns_from(workload(999), probe));
}
