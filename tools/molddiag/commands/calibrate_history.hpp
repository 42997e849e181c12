#pragma once
/// molddiag calibrate --from-history FILE: the constants of an op fitted to
/// what a device's measured history holds (mold/estimate/
/// measured_history.hpp) instead of runs made now: the way a GPU's tables
/// are made from the jobs it served. Torch-free.

#include <string>
#include <vector>

#include "calibrate_options.hpp"
#include "calibrate_phase.hpp"

namespace molddiag {

struct HistoryCalibration {
  std::string backend, device;
  std::vector<PhasePoint> points;  ///< one per distinct shape (its median)
  mold::ConstantFit fit;
  std::size_t runs = 0;
  std::string command;
  std::string block;  ///< the [op.BACKEND] table
};

/// Today's date (UTC, 2026-12-03): the stamp of a table calibrate writes.
std::string calibration_date();

/// Reads the history file, keeps the runs of request.family, op, arch (and
/// model), fits their constants and, with --write, replaces the table.
/// Throws mold::Error naming the file and what is missing.
HistoryCalibration calibrate_from_history(const CalibrateRequest& request);

}  // namespace molddiag
