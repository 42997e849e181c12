#pragma once
/// Working memory of a transformer's operation (text encoding, a denoiser
/// evaluation): linear in the tokens of its sequence and in the attention
/// scores alive at once. The calibration file holds the constants; the plugin
/// that knows the architecture says how many tokens, how wide and how many
/// scores a workload makes (its padding, heads, attention chunks):
///
///     [denoise.cpu]
///     bytes_per_token = 6.6   # per token per model-width element byte
///     bytes_per_score = 2.0   # per attention score per score element byte
///     fixed_bytes = 0         # per batch item
///     arch = "tiny"           # the architecture it was measured on
///     headroom = 1.05
///     calibrated = true
///     source = "molddiag calibrate --family zimage --op denoise ..."
///
/// estimate = (bytes_per_token x tokens x width x element
///             + bytes_per_score x scores x score element
///             + fixed_bytes) x batch x headroom.

#include <filesystem>
#include <string>

#include "mold/estimate/estimate.hpp"

namespace mold {

/// What one workload makes of an architecture, per batch item.
struct SequenceShape {
  double tokens = 0;   ///< positions whose activations live at once
  double width = 0;    ///< the model's width (hidden size)
  double element = 0;  ///< bytes of an activation element
  double scores = 0;   ///< attention scores alive at once (rows x keys x heads)
  double score_element = 0;   ///< bytes of a score element
  std::string tokens_detail;  ///< "288 tokens (256 image + 14 caption, ...)"
  std::string scores_detail;  ///< "288 query rows x 288 keys x 2 heads"
};

/// The constants of one (op, backend) table of the sequence kind.
struct SequenceModel {
  std::string op;
  std::string backend;
  double bytes_per_token = 0;
  double bytes_per_score = 0;
  double fixed_bytes = 0;
  double headroom = 1.0;
  bool calibrated = false;
  /// The architecture the constants were measured on ("" when not said);
  /// an estimate for another one is a transfer through its sizes, not a
  /// measurement.
  std::string arch;
  std::string source;
  std::filesystem::path file;           ///< the file the table came from
  std::filesystem::path overridden_by;  ///< the user file that set some keys

  /// The estimate for `workload` (its backend, arch and batch) of `shape`.
  /// calibrated only where this table was measured on the workload's backend
  /// and architecture.
  Estimate estimate(const Workload& workload, const SequenceShape& shape) const;
};

}  // namespace mold
