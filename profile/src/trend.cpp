#include "mold/profile/trend.hpp"

#include <algorithm>
#include <cmath>

namespace mold {

double student_t_975(std::size_t df) {
  static const double kTable[] = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return INFINITY;
  if (df <= 30) return kTable[df - 1];
  if (df <= 60) return 2.042 + (2.000 - 2.042) * double(df - 30) / 30.0;
  if (df <= 120) return 2.000 + (1.980 - 2.000) * double(df - 60) / 60.0;
  return 1.96;
}

Trend fit_trend(const std::vector<double>& y) {
  Trend t;
  t.points = y.size();
  if (y.empty()) return t;
  t.intercept = y.front();
  if (y.size() < 2) return t;
  const double n = double(y.size());
  const double mean_x = (n - 1) / 2;
  double mean_y = 0;
  for (const double v : y) mean_y += v;
  mean_y /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dx = double(i) - mean_x, dy = y[i] - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  t.slope = sxy / sxx;
  t.intercept = mean_y - t.slope * mean_x;
  double residual = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = y[i] - (t.intercept + t.slope * double(i));
    residual += e * e;
  }
  // A flat or perfectly straight series: the line explains it all. Relative
  // to the series' scale, so that rounding in large byte counts is no noise.
  const double scale = std::max(1.0, std::abs(mean_y));
  const bool exact = residual <= 1e-18 * scale * scale * n;
  t.r_squared = syy > 0 && !exact ? std::max(0.0, 1 - residual / syy) : 1;
  double half = 0;
  if (y.size() > 2 && !exact) {
    const double se = std::sqrt(residual / (n - 2) / sxx);
    half = student_t_975(y.size() - 2) * se;
  }
  t.slope_low = t.slope - half;
  t.slope_high = t.slope + half;
  t.min_step = t.max_step = y[1] - y[0];
  for (std::size_t i = 1; i < y.size(); ++i) {
    t.min_step = std::min(t.min_step, y[i] - y[i - 1]);
    t.max_step = std::max(t.max_step, y[i] - y[i - 1]);
  }
  return t;
}

}  // namespace mold
