#pragma once
/// Estimates corrected by what this device was measured to need
/// (measured_history.hpp).
///
/// For a workload, the phases of the same family, model, op, architecture
/// and quantization measured on this device decide, by how many distinct
/// shapes (sizes, dtype, tokens, images, batch) they cover:
///
/// - none: the table's estimate, as it is;
/// - fewer shapes than the table has constants, plus one: the table's
///   estimate scaled by the largest measured / table ratio of those
///   shapes, with `headroom` (an outlier left out, see below); a table
///   calibrated for this backend stays a floor ("table, raised by
///   history"), one that is not is replaced ("learned");
/// - enough shapes: the constants fitted to them (fit_constants: the
///   non-negative relative least squares `molddiag calibrate` uses) with
///   `headroom` ("learned"). The device's own measurements win over a table
///   measured elsewhere, except beyond the measured sizes (a basis more
///   than 1.25 times the largest measured), where the table stays a floor.
///
/// Whatever the rule, the estimate is never below a peak measured for the
/// same workload, nor below a failed allocation of it (a lower bound). A
/// run far above the others (more than `outlier_ratio` times the median,
/// relative to the fit) is left out of the fit and the scale once three
/// shapes are known, so that one disturbed run does not raise every later
/// estimate; it still floors its own workload.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "mold/estimate/estimate.hpp"
#include "mold/history/measured_history.hpp"

namespace mold {

struct LearningOptions {
  double headroom = 1.05;
  double outlier_ratio = 1.5;
  /// The newest measured phases of an op that count.
  std::size_t max_phases = 256;
};

/// The table's estimate of a workload (a registry's).
using TableEstimator = std::function<Estimate(const Workload&)>;

/// `table` (the table's estimate of `workload`) corrected by `like` (the
/// history's phases_like(workload), oldest first) measured on `device`;
/// `table_of` answers for the measured workloads. The terms keep their
/// constants and bases (their bytes scaled, their detail saying so); a floor
/// from a measured peak is a term of its own.
Estimate learned_estimate(const Estimate& table, const Workload& workload,
                          const std::vector<MeasuredPhase>& like,
                          const TableEstimator& table_of,
                          const std::string& device,
                          const LearningOptions& options = {});

/// Whether two workloads are the same shape: every size, count and dtype.
bool same_shape(const Workload& a, const Workload& b);

}  // namespace mold
