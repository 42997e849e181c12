#pragma once
/// One memory series sampled once per image (allocated, reserved or the
/// host's resident set after each image) judged on its own
/// (docs/profiler.md, "The rules"):
///
/// - warm-up ends at a change-point: the split of the series into a head
///   (any shape) and a straight tail that explains it best, by the Bayesian
///   information criterion, at most `max_warmup` images in (half the images
///   when it is negative);
/// - its noise is the tail's residual standard deviation, and the interval
///   of the tail's slope is widened by the residuals' lag-1 autocorrelation
///   (a bounded cache that wanders is noise whose points are not
///   independent);
/// - it grows when the slope's widened 95% interval lies above the threshold
///   and the rise over the tail exceeds `noise_factor` noise deviations, and
///   the steps between images drift (their mean is significant against
///   their spread, as a random walk's is not), and the end of the run is not
///   a flat stretch;
/// - it is bounded when it grew and then stayed flat for long enough to tell
///   a filled cache from a pause of an intermittent leak;
/// - undecided when it rises but the run is too short or too noisy to say
///   which, with the images a run would need.

#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/profile/trend.hpp"

namespace mold {

struct SeriesRules {
  Bytes threshold = 4 * kKiB;  ///< bytes per image that count
  /// Of the peak, a floor under the threshold (0: none; the noise-aware
  /// threshold took its place).
  double peak_fraction = 0;
  int max_warmup = -1;      ///< images warm-up may take; < 0: half of them
  double noise_factor = 6;  ///< the tail's rise must exceed this many sd
  /// The steps' mean must exceed this many of its standard errors (and
  /// Student's 97.5% quantile): a bounded cache of C entries replaced one an
  /// image is a random walk over C images.
  double step_t = 5;
  int min_flat_images = 4;  ///< the shortest flat stretch that ends growth
};

enum class SeriesShape {
  flat,       ///< no growth after warm-up
  grows,      ///< a leak's shape
  bounded,    ///< grew, then stayed flat
  undecided,  ///< rises, but the run cannot tell a filling cache from a leak
};

std::string to_string(SeriesShape shape);

struct SeriesVerdict {
  std::string name;            ///< "allocated", "reserved", "host_rss"
  std::vector<double> values;  ///< after warm-up
  int warmup = 0;              ///< images its change-point excludes
  Trend trend;                 ///< of the values after warm-up
  /// The residual standard deviation after warm-up, and the residuals'
  /// lag-1 autocorrelation (0 to 0.9) that widened the slope's interval.
  double noise = 0;
  double autocorrelation = 0;
  double slope_low = 0;  ///< the widened interval
  double slope_high = 0;
  /// The steps between consecutive images after warm-up: their mean and
  /// spread (a leak's drift must stand out of it as a random walk's would
  /// not).
  double step_mean = 0;
  double step_spread = 0;
  Bytes threshold = 0;  ///< the rule's threshold
  /// What a slope must exceed: max(threshold, peak fraction x peak,
  /// noise_factor x noise / (images after warm-up - 1)).
  Bytes slope_threshold = 0;
  bool rises_every_image = false;
  bool sloped = false;  ///< the widened interval above the thresholds
  SeriesShape shape = SeriesShape::flat;
  /// bounded: bytes it grew before its flat stretch, over which images
  /// (0-based, end exclusive), and how long it has been flat.
  double grew = 0;
  int grew_from = 0, grew_to = 0;
  int flat_images = 0;
  /// Bounded by the allocation scopes (leak_analysis.hpp): the images whose
  /// allocations are still live, the last ones in a row; 0 otherwise.
  int live_images = 0;
  /// undecided: the images a run needs to tell (at least).
  int images_needed = 0;
  bool grows() const { return shape == SeriesShape::grows; }
  /// What it does, in words with the numbers.
  std::string reason;
};

/// Series up to this long have each candidate split's lines fitted directly
/// (quadratic, but bit for bit the verdicts of earlier releases); longer ones
/// (a saved report of 10^5 images and more) from prefix sums (linear).
inline constexpr std::size_t kDirectFitImages = 2048;

/// The change-point: the number of leading images whose removal leaves the
/// series best explained by a line (0: none), at most `max_index`. Series of
/// up to `direct_up_to` images have each split's lines fitted directly
/// (fit_trend), longer ones from SegmentLines' prefix sums.
int change_point(const std::vector<double>& y, int max_index,
                 std::size_t direct_up_to = kDirectFitImages);

/// The residual sum of squares of the least-squares line through any run
/// y[a, b) of one series in O(1), from prefix sums of the series (centred on
/// its mean, in extended precision) built once in O(n).
class SegmentLines {
 public:
  explicit SegmentLines(const std::vector<double>& y);
  /// 0 for runs of fewer than 3 values (a line fits them exactly).
  double sse(std::size_t a, std::size_t b) const;

 private:
  std::vector<long double> sum_y_, sum_yy_, sum_iy_;  // [0, i) of each
};

/// `y` is the whole series, one value per image; `peak` its largest value
/// (or the device's peak) for the peak-fraction threshold.
SeriesVerdict judge_series(std::string name, const std::vector<double>& y,
                           double peak, const SeriesRules& rules);

}  // namespace mold
