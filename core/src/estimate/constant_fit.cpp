#include "mold/estimate/constant_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "mold/base/error.hpp"

namespace mold {

bool is_stage_factor(const std::string& name) {
  const std::string suffix = "_factor";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

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

struct StageFit {
  std::vector<double> factor;
  std::vector<std::size_t> owner;  ///< per point: its largest stage
};

// Factors for the stages `stage` of bases so that, per point, the largest
// stage covers peak - fixed: start with every factor 1 (the count as it is),
// then alternate: each point to the stage that is largest with the factors;
// each factor to the largest ratio of its points.
StageFit fit_factors(const std::vector<FitPoint>& points,
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

ConstantFit fit_stage_factors(const std::vector<FitPoint>& points,
                              const std::vector<std::string>& names) {
  std::vector<std::size_t> stage;
  std::optional<std::size_t> fixed;
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (is_stage_factor(names[k]))
      stage.push_back(k);
    else if (names[k] == "fixed_bytes")
      fixed = k;
    else
      throw Error(fmt::format(
          "the estimate has stage factors and '{}': molddiag calibrate fits "
          "stage factors with fixed_bytes only",
          names[k]));
  }
  for (const auto& p : points)
    for (const std::size_t k : stage)
      if (!(p.bases[k].second > 0))
        throw Error(
            fmt::format("the {} count of a point is {}: "
                        "nothing to fit",
                        names[k], p.bases[k].second));
  auto fixed_basis = [&](const FitPoint& p) {
    return fixed ? p.bases[*fixed].second : 0.0;
  };
  // The fixed bytes: the value of a grid (0, then up to 90% of the
  // smallest peak per batch item) whose fit is nearest the points in
  // squared relative error; the factors cover the rest.
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& p : points)
    if (fixed_basis(p) > 0)
      smallest = std::min(smallest, p.target / fixed_basis(p));
  std::vector<double> candidates{0};
  if (fixed && std::isfinite(smallest) && smallest > 1)
    for (int g = 0; g <= 80; ++g)
      candidates.push_back(smallest * 0.9 * std::pow(1e-4, 1 - g / 80.0));
  std::optional<std::pair<double, StageFit>> best;
  double best_error = 0;
  for (const double constant : candidates) {
    std::vector<double> target;
    for (const auto& p : points)
      target.push_back(std::max(1.0, p.target - constant * fixed_basis(p)));
    StageFit fit = fit_factors(points, stage, target);
    double error = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const std::size_t s = fit.owner[i];
      const double bytes = fit.factor[s] * points[i].bases[stage[s]].second +
                           constant * fixed_basis(points[i]);
      const double r = bytes / double(std::max(points[i].target, 1.0));
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

/// The constants of a sum of terms, unscaled.
ConstantFit fit_sum(const std::vector<FitPoint>& points) {
  std::vector<std::string> names;
  for (const auto& [name, basis] : points.front().bases) names.push_back(name);
  const std::size_t n = names.size();
  // More points than constants, so that the fit is tested by a point it did
  // not have to pass through.
  if (points.size() <= n)
    throw Error(fmt::format(
        "{} points cannot test a fit of {} constants: measure at least {} "
        "(each size with each prompt length)",
        points.size(), n, n + 1));
  // Rows scaled by 1/measured: the squared relative error.
  auto row = [&](const FitPoint& p, std::size_t i) {
    return p.bases[i].second / double(std::max(p.target, 1.0));
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
    // Each column scaled to unit norm first: the bases differ by orders of
    // magnitude (a token count against a byte per batch item), and an
    // unscaled system would look singular where it is not.
    std::vector<double> norm(free.size());
    for (std::size_t r = 0; r < free.size(); ++r) norm[r] = std::sqrt(a[r][r]);
    if (std::any_of(norm.begin(), norm.end(),
                    [](double v) { return !(v > 0); }))
      continue;
    for (std::size_t r = 0; r < free.size(); ++r) {
      for (std::size_t c = 0; c < free.size(); ++c)
        a[r][c] /= norm[r] * norm[c];
      b[r] /= norm[r];
    }
    std::vector<double> x;
    if (!solve(a, b, x)) continue;
    for (std::size_t r = 0; r < free.size(); ++r) x[r] /= norm[r];
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
    throw Error(
        fmt::format("{} points do not decide the constants; measure more "
                    "sizes or prompt lengths",
                    points.size()));
  ConstantFit fit;
  for (std::size_t i = 0; i < n; ++i)
    fit.constants.emplace_back(names[i], (*best)[i]);
  return fit;
}

/// Scales `fit` so that it covers every point not in fit.outliers.
void cover(ConstantFit& fit, const std::vector<FitPoint>& points) {
  double scale = 0;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (std::find(fit.outliers.begin(), fit.outliers.end(), i) ==
        fit.outliers.end())
      scale = std::max(scale,
                       points[i].target / fitted_bytes(fit, points[i].bases));
  if (!(scale > 0) || !std::isfinite(scale))
    throw Error("the measured peaks are all 0: nothing to fit");
  for (auto& [name, value] : fit.constants) value *= scale;
  fit.scale = scale;
}

}  // namespace

ConstantFit fit_constants(const std::vector<FitPoint>& points,
                          const FitOptions& options) {
  if (points.empty()) throw Error("no points to fit");
  for (const auto& p : points)
    if (p.bases.size() != points.front().bases.size())
      throw Error("the points' estimates have different terms");
  for (const auto& [name, basis] : points.front().bases)
    if (is_stage_factor(name)) {
      std::vector<std::string> names;
      for (const auto& base : points.front().bases) names.push_back(base.first);
      return fit_stage_factors(points, names);
    }
  ConstantFit fit = fit_sum(points);
  if (options.outlier_ratio > 0) {
    // Each point relative to the first fit; a point far above the median
    // (a run something else disturbed) is left out, and the rest refitted,
    // when enough remain to test a fit.
    std::vector<double> ratio;
    for (const auto& p : points)
      ratio.push_back(p.target / std::max(fitted_bytes(fit, p.bases), 1.0));
    std::vector<double> sorted = ratio;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    std::vector<std::size_t> outliers;
    std::vector<FitPoint> kept;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (ratio[i] > options.outlier_ratio * median)
        outliers.push_back(i);
      else
        kept.push_back(points[i]);
    }
    if (!outliers.empty() && kept.size() > fit.constants.size()) {
      fit = fit_sum(kept);
      fit.outliers = std::move(outliers);
    }
  }
  cover(fit, points);
  return fit;
}

double fitted_bytes(const ConstantFit& fit,
                    const std::vector<std::pair<std::string, double>>& bases) {
  double bytes = 0;
  double largest_stage = 0;
  for (std::size_t i = 0; i < fit.constants.size() && i < bases.size(); ++i) {
    const double term = fit.constants[i].second * bases[i].second;
    if (fit.staged && is_stage_factor(fit.constants[i].first))
      largest_stage = std::max(largest_stage, term);
    else
      bytes += term;
  }
  return bytes + largest_stage;
}

}  // namespace mold
