#pragma once
/// A straight line through a series measured once per image: the ordinary
/// least-squares slope, how well a line explains the series (R^2) and the
/// slope's 95% confidence interval.

#include <cstddef>
#include <vector>

namespace mold {

struct Trend {
  std::size_t points = 0;
  double slope = 0;      ///< per image
  double intercept = 0;  ///< at the first point
  /// 1 - residual / total sum of squares; 1 for a series on a line (a flat
  /// one included), near 0 for noise around a mean.
  double r_squared = 1;
  /// The slope's 95% confidence interval (Student's t with points - 2
  /// degrees of freedom); the slope itself for 2 points or a perfect line.
  double slope_low = 0;
  double slope_high = 0;
  /// The smallest and largest step between consecutive points.
  double min_step = 0;
  double max_step = 0;
};

/// Fits y[i] = intercept + slope x i. Fewer than 2 points give a flat trend.
Trend fit_trend(const std::vector<double>& y);

/// The 97.5% quantile of Student's t distribution with `df` degrees of
/// freedom (the two-sided 95% interval's factor); 1.96 beyond a table of
/// the first 30.
double student_t_975(std::size_t df);

}  // namespace mold
