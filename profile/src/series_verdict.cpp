#include "mold/profile/series_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace mold {

namespace {

/// The residual sum of squares of the least-squares line through y[a, b).
double line_sse(const std::vector<double>& y, std::size_t a, std::size_t b) {
  if (b - a < 3) return 0;
  const std::vector<double> part(y.begin() + std::ptrdiff_t(a),
                                 y.begin() + std::ptrdiff_t(b));
  const Trend t = fit_trend(part);
  double sse = 0;
  for (std::size_t i = 0; i < part.size(); ++i) {
    const double e = part[i] - (t.intercept + t.slope * double(i));
    sse += e * e;
  }
  return sse;
}

/// A noise scale that a bend does not inflate: from the median absolute
/// second difference (for independent noise of deviation s, the second
/// difference has deviation s x sqrt(6)). 0 for a piecewise straight series.
double robust_noise(const std::vector<double>& y) {
  if (y.size() < 3) return 0;
  std::vector<double> d2;
  for (std::size_t i = 2; i < y.size(); ++i)
    d2.push_back(std::abs(y[i] - 2 * y[i - 1] + y[i - 2]));
  std::nth_element(d2.begin(), d2.begin() + std::ptrdiff_t(d2.size() / 2),
                   d2.end());
  return 1.4826 * d2[d2.size() / 2] / std::sqrt(6.0);
}

/// The longest run of consecutive steps below `flat` in y[a, b).
int longest_pause(const std::vector<double>& y, std::size_t a, std::size_t b,
                  double flat) {
  int longest = 0, run = 0;
  for (std::size_t i = a + 1; i < b; ++i) {
    run = y[i] - y[i - 1] < flat ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

std::string to_string(SeriesShape shape) {
  switch (shape) {
  case SeriesShape::flat:
    return "flat";
  case SeriesShape::grows:
    return "grows";
  case SeriesShape::bounded:
    return "bounded";
  case SeriesShape::undecided:
    return "undecided";
  }
  return "?";
}

SegmentLines::SegmentLines(const std::vector<double>& y)
    : sum_y_(y.size() + 1, 0),
      sum_yy_(y.size() + 1, 0),
      sum_iy_(y.size() + 1, 0) {
  long double mean = 0;
  for (double v : y) mean += v;
  if (!y.empty()) mean /= (long double)y.size();
  for (std::size_t i = 0; i < y.size(); ++i) {
    const long double v = (long double)y[i] - mean;
    sum_y_[i + 1] = sum_y_[i] + v;
    sum_yy_[i + 1] = sum_yy_[i] + v * v;
    sum_iy_[i + 1] = sum_iy_[i] + (long double)i * v;
  }
}

double SegmentLines::sse(std::size_t a, std::size_t b) const {
  if (b < a + 3) return 0;
  const long double n = (long double)(b - a);
  const long double sy = sum_y_[b] - sum_y_[a];
  const long double syy = sum_yy_[b] - sum_yy_[a];
  // x = i - a over the run: sum x = n(n-1)/2, centred sum of squares
  // n(n^2-1)/12.
  const long double sxy = (sum_iy_[b] - sum_iy_[a]) - (long double)a * sy;
  const long double mean_x = (n - 1) / 2;
  const long double cxx = n * (n * n - 1) / 12;
  const long double cxy = sxy - mean_x * sy;
  const long double cyy = syy - sy * sy / n;
  return double(std::max<long double>(0, cyy - cxy * cxy / cxx));
}

int change_point(const std::vector<double>& y, int max_index,
                 std::size_t direct_up_to) {
  const int n = int(y.size());
  max_index = std::min(max_index, n - 3);
  if (max_index <= 0) return 0;
  // Bayesian information criterion of "one line" against "a head of any
  // shape (a line through it), then a line": n ln(SSE / n) + k ln(n), with
  // a floor of 64 bytes of deviation per point so that series exact to the
  // byte do not divide by zero (ties go to the earlier split).
  const double floor = double(n) * 64.0 * 64.0;
  std::optional<SegmentLines> lines;
  if (y.size() > direct_up_to) lines.emplace(y);
  auto segment_sse = [&](std::size_t a, std::size_t b) {
    return lines ? lines->sse(a, b) : line_sse(y, a, b);
  };
  auto cost = [&](int w) {
    const double sse = segment_sse(0, std::size_t(w)) +
                       segment_sse(std::size_t(w), std::size_t(n));
    const int k = w == 0 ? 2 : 2 + std::min(w, 2) + 1;
    return double(n) * std::log((sse + floor) / double(n)) +
           double(k) * std::log(double(n));
  };
  int best = 0;
  double best_cost = cost(0);
  for (int w = 1; w <= max_index; ++w) {
    const double c = cost(w);
    if (c < best_cost - 1e-9) {
      best = w;
      best_cost = c;
    }
  }
  return best;
}

SeriesVerdict judge_series(std::string name, const std::vector<double>& y,
                           double peak, const SeriesRules& rules) {
  SeriesVerdict v;
  v.name = std::move(name);
  v.threshold = rules.threshold;
  const int n = int(y.size());
  const double base =
      std::max(double(rules.threshold),
               std::round(rules.peak_fraction * std::max(0.0, peak)));
  v.slope_threshold = Bytes(base);
  if (n < 4) {
    v.values = y;
    v.trend = fit_trend(y);
    v.reason = "too few images to tell (4 are needed)";
    return v;
  }
  const int max_warmup = rules.max_warmup < 0 ? n / 2 : rules.max_warmup;
  v.warmup = change_point(y, max_warmup);
  const std::size_t w = std::size_t(v.warmup);
  v.values.assign(y.begin() + std::ptrdiff_t(w), y.end());
  const int m = int(v.values.size());
  const Trend& t = v.trend = fit_trend(v.values);

  // The tail's noise: its residuals' deviation and their lag-1
  // autocorrelation.
  double sse = 0, lag = 0;
  std::vector<double> e(std::size_t(m), 0.0);
  for (int i = 0; i < m; ++i) {
    e[std::size_t(i)] =
        v.values[std::size_t(i)] - (t.intercept + t.slope * double(i));
    sse += e[std::size_t(i)] * e[std::size_t(i)];
    if (i > 0) lag += e[std::size_t(i)] * e[std::size_t(i) - 1];
  }
  const bool exact = t.slope_high == t.slope_low;
  v.noise = exact ? 0 : std::sqrt(sse / double(std::max(1, m - 2)));
  const double lag_one = m >= 5 && sse > 0 ? lag / sse : 0.0;
  v.autocorrelation = std::clamp(lag_one, 0.0, 0.9);
  const double widen =
      std::sqrt((1 + v.autocorrelation) / (1 - v.autocorrelation));
  const double half = (t.slope_high - t.slope) * widen;
  v.slope_low = t.slope - half;
  v.slope_high = t.slope + half;
  const double noise = v.noise;
  const double noise_threshold = rules.noise_factor * noise / double(m - 1);
  v.slope_threshold = Bytes(std::ceil(std::max(base, noise_threshold)));
  const double threshold = double(v.slope_threshold);
  // The steps' drift, against a random walk: a bounded cache whose entries
  // are replaced one an image moves like one over a short run, and a line's
  // residuals do not show it; a leak's steps are positive with less spread.
  double step_sum = 0, step_squares = 0;
  for (int i = 1; i < m; ++i)
    step_sum += v.values[std::size_t(i)] - v.values[std::size_t(i) - 1];
  v.step_mean = step_sum / double(m - 1);
  for (int i = 1; i < m; ++i) {
    const double d =
        v.values[std::size_t(i)] - v.values[std::size_t(i) - 1] - v.step_mean;
    step_squares += d * d;
  }
  v.step_spread = m > 2 ? std::sqrt(step_squares / double(m - 2)) : 0;
  // Noise that alternates around the line (residuals anti-correlated) is no
  // wander: there Student's quantile suffices (not after a change-point,
  // which chose the straightest tail).
  const double step_t =
      std::max(lag_one < -0.2 && w == 0 ? 0.0 : rules.step_t,
               student_t_975(std::size_t(std::max(1, m - 2))));
  const bool drifts =
      v.step_mean >= base &&
      v.step_mean * std::sqrt(double(m - 1)) > step_t * v.step_spread;
  // Rising at every image by the threshold counts when the steps drift too
  // (a bounded cache rises a few images in a row by chance) over 3 steps.
  v.rises_every_image = m >= 4 && t.min_step >= threshold && drifts;
  v.sloped = v.slope_low >= base && t.slope >= threshold && drifts;
  const std::string slope_text = fmt::format(
      "slope {} per image (95% interval {} to {}{}), R^2 {:.2f}, noise {}",
      format_byte_change(t.slope), format_byte_change(v.slope_low),
      format_byte_change(v.slope_high),
      v.autocorrelation > 0
          ? fmt::format(", widened for autocorrelation {:.2f}",
                        v.autocorrelation)
          : std::string(),
      t.r_squared, format_byte_change(noise));
  auto image_range = [](int from, int to) {  // 0-based, end exclusive
    return to - from == 1 ? fmt::format("image {}", from + 1)
                          : fmt::format("images {}-{}", from + 1, to);
  };

  if (v.rises_every_image || v.sloped) {
    // Rising. Unless its end is a flat stretch longer than any pause of its
    // growth: then it filled and stopped (bounded), or the run is too short
    // to tell a stop from a pause (undecided).
    int flat_steps = 0;
    while (flat_steps < n - 1 && y[std::size_t(n - 1 - flat_steps)] -
                                         y[std::size_t(n - 2 - flat_steps)] <
                                     base)
      ++flat_steps;
    const std::size_t growth_end = std::size_t(n - flat_steps);
    const int pause = longest_pause(y, w, growth_end, base);
    // The whole run rising at every image by the threshold, its steps
    // drifting (a leak whose first images were irregular).
    double all_min = y[1] - y[0], all_sum = 0, all_squares = 0;
    for (int i = 1; i < n; ++i) {
      const double d = y[std::size_t(i)] - y[std::size_t(i) - 1];
      all_min = std::min(all_min, d);
      all_sum += d;
    }
    const double all_mean = all_sum / double(n - 1);
    for (int i = 1; i < n; ++i) {
      const double d = y[std::size_t(i)] - y[std::size_t(i) - 1] - all_mean;
      all_squares += d * d;
    }
    const double all_spread = std::sqrt(all_squares / double(n - 2));
    const bool whole_run_rises =
        n >= 5 && all_min >= base &&
        all_mean * std::sqrt(double(n - 1)) >
            std::max(rules.step_t, student_t_975(std::size_t(n - 2))) *
                all_spread;
    if ((flat_steps == 0 || flat_steps <= pause) && v.warmup > 0 && m < 5 &&
        !whole_run_rises) {
      // The change-point chose the straightest tail: a short one rises by
      // chance too often to be called a leak.
      v.shape = SeriesShape::undecided;
      v.images_needed = v.warmup + 5;
      v.reason = fmt::format(
          "undecided: {}, but over only the {} images after the change-point "
          "at image {}; run at least {} images",
          slope_text, m, v.warmup + 1, v.images_needed);
      return v;
    }
    if (flat_steps == 0 || flat_steps <= pause) {
      v.shape = SeriesShape::grows;
      v.reason = v.rises_every_image
                     ? fmt::format("rises at every image by {} or more; {}",
                                   format_byte_change(t.min_step), slope_text)
                     : fmt::format("{}, above {} per image", slope_text,
                                   format_bytes(v.slope_threshold));
      return v;
    }
    const int need_flat = std::max(rules.min_flat_images - 1, 2 * pause + 1);
    v.grew = y.back() - y.front();
    v.grew_from = 0;
    v.grew_to = int(growth_end);
    v.flat_images = flat_steps;
    if (flat_steps >= need_flat) {
      v.shape = SeriesShape::bounded;
      v.reason = fmt::format(
          "bounded: grew {} over {}, flat for the {} images since (longer "
          "than any pause of its growth)",
          format_byte_change(v.grew), image_range(0, v.grew_to), flat_steps);
    } else {
      v.shape = SeriesShape::undecided;
      v.images_needed = n + need_flat - flat_steps;
      v.reason = fmt::format(
          "undecided: grew {} over {}, then flat for {} image{}: a cache that "
          "filled, or a leak that pauses; run at least {} images ({} flat "
          "images tell)",
          format_byte_change(v.grew), image_range(0, v.grew_to), flat_steps,
          flat_steps == 1 ? "" : "s", v.images_needed, need_flat);
    }
    return v;
  }
  if (v.slope_low > base && t.slope > 0) {
    // Significant, but below its own noise.
    v.shape = SeriesShape::undecided;
    // The images its noise and its steps' spread ask for at this slope.
    const double by_noise = std::ceil(rules.noise_factor * noise / t.slope) + 1;
    const double ratio = step_t * v.step_spread / std::max(t.slope, 1.0);
    const double by_steps = std::ceil(ratio * ratio) + 1;
    v.images_needed = int(std::min(
        100000.0, double(w) + std::max({by_noise, by_steps, double(m + 1)})));
    v.reason = fmt::format(
        "undecided: {}: it rises, but {}; run at least {} images", slope_text,
        drifts ? fmt::format("by less than {:g} deviations of its noise over "
                             "the run",
                             rules.noise_factor)
               : fmt::format("its steps ({} on average, spread {}) could be "
                             "a bounded cache's wander",
                             format_byte_change(v.step_mean),
                             format_byte_change(v.step_spread)),
        v.images_needed);
    return v;
  }
  // Flat after warm-up. Bounded when it grew first: a cache that filled. A
  // series straight by pieces (no noise) is flat where its steps are; a
  // noisy one over its tail.
  int flat = m;
  double level = t.intercept;
  if (robust_noise(y) <= base / 2) {
    int steps = 0;
    while (steps < n - 1 && std::abs(y[std::size_t(n - 1 - steps)] -
                                     y[std::size_t(n - 2 - steps)]) < base)
      ++steps;
    flat = steps + 1;
    level = y.back();
  }
  const int grew_to = n - flat;
  if (grew_to > 0 && level - y.front() > std::max(base, 2 * noise)) {
    const int pause = longest_pause(y, 0, std::size_t(grew_to) + 1, base);
    const int need = std::max(rules.min_flat_images, 2 * pause + 2);
    v.grew = level - y.front();
    v.grew_from = 0;
    v.grew_to = grew_to;
    v.flat_images = flat;
    if (flat >= need) {
      v.shape = SeriesShape::bounded;
      v.reason =
          fmt::format("bounded: grew {} over {}, flat since ({} images: {})",
                      format_byte_change(v.grew), image_range(0, grew_to), flat,
                      slope_text);
    } else {
      v.shape = SeriesShape::undecided;
      v.images_needed = n + need - flat;
      v.reason = fmt::format(
          "undecided: grew {} over {}, then flat for {} image{}: a cache that "
          "filled, or a leak that pauses; run at least {} images",
          format_byte_change(v.grew), image_range(0, grew_to), flat,
          flat == 1 ? "" : "s", v.images_needed);
    }
    return v;
  }
  v.reason = fmt::format(
      "{}; a leak needs a rise of {} at every image, or a slope whose 95% "
      "interval is above {} and which rises above {:g} noise deviations",
      slope_text, format_bytes(v.slope_threshold), format_bytes(Bytes(base)),
      rules.noise_factor);
  return v;
}

}  // namespace mold
