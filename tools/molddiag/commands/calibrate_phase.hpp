#pragma once
/// molddiag calibrate for a text encoder's or denoiser's op (text_encode,
/// denoise): runs the family's pipeline with seeded weights on the cpu
/// backend at each (size, prompt length), takes the op's working memory as
/// the runtime measures it (the phase's peak above what was allocated when
/// it started), and fits the constants of the estimate's terms (each term
/// says which constant it scales and what it multiplies) to cover every
/// point. Includes libtorch through the runtime: only calibrate uses it.

#include <functional>
#include <mold/base/bytes.hpp>
#include <mold/estimate/constant_fit.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/host.hpp"

namespace molddiag {

struct PhaseCalibration {
  std::string family, op, arch;
  std::vector<int> sizes;   ///< square image edges
  std::vector<int> tokens;  ///< prompt lengths in words (one token each)
  std::string model;        ///< the family's model to run; "": its first
  /// Source images per run (edit models): each run has N square images of
  /// its size; empty: none.
  std::vector<int> images;
  /// The dtypes to run in (each size, prompt and image count in each).
  std::vector<std::string> dtypes{"float32"};
  /// A diffusers-format model directory to load instead of seeded weights
  /// at `arch`; empty: seeded.
  std::string model_dir;
  int steps = 2;                ///< denoising steps per run
  std::string backend = "cpu";  ///< where the runs are made
};

/// One run's phase.
struct PhasePoint {
  int size = 0;
  int words = 0;
  int tokens = 0;     ///< the workload's, chat template included
  int images = 0;     ///< source images of the run
  std::string dtype;  ///< the run's
  /// The weights: "tiny" (seeded) or the model directory's name; for points
  /// read with --points-from, "FILE: " before it.
  std::string weights;
  mold::Bytes peak = 0;
  int threads = 1;  ///< the compute threads the run had
  /// The estimate's scratch of the threads past the first (its "threads"
  /// term, which no constant scales): the fit covers the peak without it.
  mold::Bytes thread_bytes = 0;
  /// A quantized model's dequantization buffer (the estimate's
  /// "dequantized_weights" term, an exact count): not fitted either.
  mold::Bytes weight_bytes = 0;
  mold::Bytes estimate = 0;  ///< with the constants in force now
  /// (constant, basis) of each of the estimate's terms that has one.
  std::vector<std::pair<std::string, double>> bases;
  double seconds = 0;
  /// The process's resident peak during the phase above its resident set at
  /// the start (0 where /proc cannot say).
  mold::Bytes rss_peak = 0;
};

/// The point's terms that no constant scales: its threads' scratch and its
/// dequantization buffer.
inline mold::Bytes unfitted_bytes(const PhasePoint& p) {
  return p.thread_bytes + p.weight_bytes;
}

/// What the constants must cover at a point: the peak less its unfitted
/// terms.
inline mold::Bytes fitted_peak(const PhasePoint& p) {
  return p.peak > unfitted_bytes(p) ? p.peak - unfitted_bytes(p) : 0;
}

/// Runs the pipeline once per (size, words) and returns the op's points.
std::vector<PhasePoint> measure_phase(
    const mold::tools::Host& host, const PhaseCalibration& calibration,
    const std::function<void(const PhasePoint&)>& on_point);

/// mold::fit_constants of the points (their peaks less the unfitted terms).
mold::ConstantFit fit_constants(const std::vector<PhasePoint>& points);

/// The fit's bytes at a point (the largest stage's, for stage factors).
double fitted_bytes(const mold::ConstantFit& fit, const PhasePoint& point);

}  // namespace molddiag
