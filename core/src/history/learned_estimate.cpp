#include "mold/history/learned_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "mold/base/error.hpp"
#include "mold/estimate/constant_fit.hpp"

namespace mold {

namespace {

/// A basis past this times the largest measured one is beyond the sizes
/// the history knows.
constexpr double kExtrapolation = 1.25;

/// The constant's bases of an estimate, in its terms' order.
std::vector<std::pair<std::string, double>> bases_of(const Estimate& e) {
  std::vector<std::pair<std::string, double>> bases;
  for (const auto& term : e.terms)
    if (!term.constant.empty()) bases.emplace_back(term.constant, term.basis);
  return bases;
}

Bytes counted_bytes(const Estimate& e) {
  Bytes bytes = 0;
  for (const auto& term : e.terms)
    if (term.counted) bytes += term.bytes;
  return bytes;
}

/// One measured shape: the median of its runs' peaks (one disturbed run of
/// a shape measured often does not move it).
struct Shape {
  Workload workload;
  std::vector<std::pair<std::string, double>> bases;
  Bytes unfitted = 0;
  std::vector<Bytes> peaks;

  double target() const {
    std::vector<Bytes> sorted = peaks;
    std::sort(sorted.begin(), sorted.end());
    const Bytes median = sorted[(sorted.size() - 1) / 2];
    return median > unfitted ? double(median - unfitted) : 0.0;
  }
};

bool same_names(const std::vector<std::pair<std::string, double>>& a,
                const std::vector<std::pair<std::string, double>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first) return false;
  return true;
}

/// The largest of `ratios` that is not an outlier (more than `outlier`
/// times their median, once there are three).
double robust_max(std::vector<double> ratios, double outlier) {
  std::sort(ratios.begin(), ratios.end());
  if (ratios.size() < 3) return ratios.back();
  const double median = ratios[ratios.size() / 2];
  double best = 0;
  for (const double r : ratios)
    if (r <= outlier * median) best = std::max(best, r);
  return best;
}

}  // namespace

bool same_shape(const Workload& a, const Workload& b) {
  return a.dtype == b.dtype && a.batch == b.batch && a.height == b.height &&
         a.width == b.width && a.frames == b.frames && a.tile == b.tile &&
         a.attention_bound == b.attention_bound && a.tokens == b.tokens &&
         a.images == b.images && a.threads == b.threads;
}

Estimate learned_estimate(const Estimate& table, const Workload& workload,
                          const std::vector<MeasuredPhase>& like,
                          const TableEstimator& table_of,
                          const std::string& device,
                          const LearningOptions& options) {
  if (like.empty()) return table;
  // What the same workload was measured to need: a floor.
  Bytes floor = 0;
  bool floor_is_bound = false;
  for (const auto& phase : like)
    if (same_shape(phase.workload, workload) && phase.peak > floor) {
      floor = phase.peak;
      floor_is_bound = phase.lower_bound;
    }
  // The newest measured runs, by shape.
  std::vector<Shape> shapes;
  std::size_t runs = 0;
  for (auto it = like.rbegin(); it != like.rend() && runs < options.max_phases;
       ++it) {
    if (it->lower_bound) continue;
    ++runs;
    auto shape = std::find_if(
        shapes.begin(), shapes.end(),
        [&](const Shape& s) { return same_shape(s.workload, it->workload); });
    if (shape == shapes.end()) {
      shapes.push_back({it->workload, it->bases, it->unfitted, {}});
      shape = shapes.end() - 1;
    }
    shape->peaks.push_back(it->peak);
  }

  const auto bases = bases_of(table);
  const Bytes counted = counted_bytes(table);
  const double table_fitted =
      table.bytes > counted ? double(table.bytes - counted) : 0.0;
  std::optional<double> learned;  // the fitted part, before headroom
  bool fitted = false;
  bool beyond = false;
  std::string how;
  if (!bases.empty() && shapes.size() > bases.size() &&
      std::all_of(shapes.begin(), shapes.end(),
                  [&](const Shape& s) { return same_names(s.bases, bases); })) {
    std::vector<FitPoint> points;
    for (const auto& s : shapes) points.push_back({s.bases, s.target()});
    try {
      const ConstantFit fit =
          fit_constants(points, FitOptions{options.outlier_ratio});
      learned = fitted_bytes(fit, bases);
      fitted = true;
      how = fmt::format("constants fitted to {} shapes", shapes.size());
      if (!fit.outliers.empty())
        how += fmt::format(", {} outlier{} left out", fit.outliers.size(),
                           fit.outliers.size() == 1 ? "" : "s");
      for (std::size_t i = 0; i < bases.size(); ++i) {
        double largest = 0;
        for (const auto& s : shapes)
          largest = std::max(largest, s.bases[i].second);
        if (bases[i].second > kExtrapolation * largest) beyond = true;
      }
    } catch (const Error&) {  // the shapes do not decide the constants
    }
  }
  // The table scaled by the largest measured / table ratio: the estimate
  // before the fit, and a floor of the fit beyond the measured sizes.
  std::optional<double> scaled;
  std::string scaled_how;
  if (table_fitted > 0 && (!learned || beyond)) {
    std::vector<double> ratios;
    for (const auto& s : shapes) {
      try {
        const Estimate then = table_of(s.workload);
        const Bytes then_counted = counted_bytes(then);
        if (then.bytes > then_counted)
          ratios.push_back(s.target() / double(then.bytes - then_counted));
      } catch (const Error&) {  // the table no longer answers for it
      }
    }
    if (!ratios.empty()) {
      const double scale = robust_max(ratios, options.outlier_ratio);
      scaled = table_fitted * scale;
      scaled_how = fmt::format(
          "the table x {:.3f}, the largest measured/table ratio of {} shape{}",
          scale, ratios.size(), ratios.size() == 1 ? "" : "s");
    }
  }
  if (!learned && scaled) {
    learned = scaled;
    how = scaled_how;
  } else if (learned && beyond && scaled && *scaled > *learned) {
    learned = scaled;
    how += "; beyond the measured sizes: " + scaled_how;
  }
  Estimate out = table;
  out.learned_runs = runs;
  double chosen = table_fitted;
  const bool table_floors = table.calibrated && (!fitted || beyond);
  if (learned) {
    const double mine = *learned * options.headroom;
    if (table_floors && table_fitted >= mine) {
      out.origin = "table";
    } else {
      chosen = mine;
      out.origin = table_floors ? "table, raised by history" : "learned";
    }
  }
  // The terms that carry the table's bytes, scaled to the chosen bytes.
  Bytes sum = 0;
  if (table_fitted > 0 && out.origin != "table") {
    const double factor = chosen / table_fitted;
    for (auto& term : out.terms) {
      if (!term.counted) {
        term.bytes = bytes_from_double(double(term.bytes) * factor,
                                       "the learned estimate");
        if (term.bytes > 0)
          term.detail += fmt::format(" x{:.3f} (learned)", factor);
      }
      sum += term.bytes;
    }
  } else {
    for (const auto& term : out.terms) sum += term.bytes;
    if (table_fitted <= 0 && learned) {
      out.terms.emplace_back(
          "learned", bytes_from_double(chosen, "the learned estimate"), how);
      sum += out.terms.back().bytes;
      out.origin = "learned";
    }
  }
  if (floor > sum) {
    out.terms.emplace_back(
        "measured floor", floor - sum,
        fmt::format("{} of this same workload measured on {}: {}",
                    floor_is_bound ? "an allocation that failed" : "the peak",
                    device, format_bytes(floor)));
    sum = floor;
    if (out.origin == "table") out.origin = "table, raised by history";
  }
  out.bytes = sum;
  if (out.origin != "table")
    out.source = fmt::format("{} ({} run{} on {}{}{}); {}", out.origin, runs,
                             runs == 1 ? "" : "s", device,
                             how.empty() ? "" : ": ", how, table.source);
  return out;
}

}  // namespace mold
