#pragma once
/// Fitting an estimate's constants to measured peaks: the arithmetic behind
/// `molddiag calibrate` (runs it measures) and the learned estimates (runs a
/// device's history recorded).
///
/// Each point is one measured run of an op: the (constant, basis) of each of
/// its estimate's terms that a constant scales (EstimateTerm::constant and
/// ::basis) and the bytes those terms must cover (the measured peak less the
/// terms no constant scales).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace mold {

struct FitPoint {
  std::vector<std::pair<std::string, double>> bases;
  double target = 0;
};

struct ConstantFit {
  /// The fitted constants, by name, in the order the estimate has them.
  std::vector<std::pair<std::string, double>> constants;
  /// The fit before scaling: the largest measured/fitted ratio, which
  /// scaled every constant so that the fit covers every point kept.
  double scale = 1;
  /// Stage factors ("attention_factor"): the fit is the largest stage, not
  /// the sum of the terms.
  bool staged = false;
  /// The stages that were the largest at no measured point (their factor
  /// is the largest that keeps them so).
  std::vector<std::string> never_largest;
  /// The points (indices) left out as outliers (FitOptions::outlier_ratio).
  std::vector<std::size_t> outliers;
};

struct FitOptions {
  /// 0: every point counts. Otherwise a point whose measured bytes are more
  /// than this times the median point's, both relative to a first fit, is
  /// an outlier (a run disturbed by something else): it is left out of the
  /// fit and of the scale, when enough points remain to fit without it.
  /// Not applied to stage factors.
  double outlier_ratio = 0;
};

/// Whether a constant is a stage factor ("attention_factor").
bool is_stage_factor(const std::string& name);

/// The non-negative constants minimising the squared relative error of
/// sum(constant x basis) over the points, scaled so that no point (outliers
/// aside) is above the fit. Throws mold::Error when there are not more
/// points than constants, when the points' terms differ, or when nothing
/// decides them. For stage factors (every constant named "*_factor", with
/// an optional "fixed_bytes"): each stage's factor is the largest
/// measured / counted ratio of the points where that stage is the largest,
/// so that the largest stage covers every point.
ConstantFit fit_constants(const std::vector<FitPoint>& points,
                          const FitOptions& options = {});

/// The fit's bytes at `bases` (the largest stage's, for stage factors).
double fitted_bytes(const ConstantFit& fit,
                    const std::vector<std::pair<std::string, double>>& bases);

}  // namespace mold
