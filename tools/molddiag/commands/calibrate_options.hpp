#pragma once
/// molddiag calibrate's options, read and checked without libtorch: molddiag
/// refuses a bad command line itself and hands a good one to molddiag-torch.

#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct CalibrateRequest {
  mold::tools::HostOptions host;
  std::string family, op, sizes_text, arch;
  std::vector<int> sizes;   ///< square image edges, parsed from sizes_text
  std::string tokens_text;  ///< text_encode, denoise: prompt lengths
  std::vector<int> tokens;
  std::string model;        ///< --model: the family's model to run
  std::string images_text;  ///< --images: source images per run (edits)
  std::vector<int> images;
  std::string dtypes_text = "float32";  ///< --dtype: a comma-separated list
  std::vector<std::string> dtypes;
  std::string model_dir;  ///< --model-dir (per-token ops)
  /// --points-from: JSON outputs of earlier runs whose points join the fit.
  std::vector<std::string> points_from;
  int steps = 2;  ///< --steps (per-token ops)
  /// --attention-from: vae_* sizes from which on the points fit the
  /// attention term instead of the per-pixel constant; 0: none.
  int attention_from = 0;
  double headroom = 1.05;
  std::string write;  ///< the calibration file to update; empty: none
  /// --from-history: a measured history file whose runs are fitted instead
  /// of runs made now (calibrate_history.hpp).
  std::string from_history;
  /// --backend: where the runs are made (the table is [op.BACKEND]).
  std::string backend = "cpu";
  bool json = false, verbose = false;
};

/// Every op but the VAE's is measured through the pipeline per token
/// (text_encode, denoise, and a plugin's own such as vision_encode).
bool is_sequence_op(const std::string& op);

/// Parses molddiag calibrate's arguments; throws tools::UsageError naming the
/// flag.
mold::tools::Parsed<CalibrateRequest> parse_calibrate_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
