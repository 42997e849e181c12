#pragma once
/// Working-memory estimates: how many device bytes an operation needs beyond
/// its weights.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

/// One named part of an estimate, with the arithmetic that produced it.
struct EstimateTerm {
  EstimateTerm() = default;
  EstimateTerm(std::string name, Bytes bytes, std::string detail,
               std::string constant = {}, double basis = 0)
      : name(std::move(name)),
        bytes(bytes),
        detail(std::move(detail)),
        constant(std::move(constant)),
        basis(basis) {}

  std::string name;  ///< "activations"
  Bytes bytes = 0;
  std::string detail;  ///< "2900 x 1038336 px x 2 B x batch 1"
  /// The calibration constant this term scales ("bytes_per_token"; empty for
  /// a term no constant decides, such as headroom) and what it multiplies:
  /// bytes = constant x basis. `molddiag calibrate` fits the constants of
  /// measured runs from these.
  std::string constant;
  double basis = 0;
  /// An exact count (or a bound) that no constant scales and no fit
  /// learns: the threads' scratch, a dequantization buffer. Measured peaks
  /// are fitted without these terms.
  bool counted = false;
};

struct Estimate {
  Bytes bytes = 0;  ///< the sum of the terms: what a cache must reserve
  std::vector<EstimateTerm> terms;
  /// True when the constants come from measurements on this backend; false when
  /// they are borrowed (e.g. from another backend) until someone measures.
  bool calibrated = false;
  /// Where the constants come from: file, table and the measurement behind
  /// them.
  std::string source;
  /// What decided the bytes: "table" (the constants), "learned" (this
  /// device's measured history), "table, raised by history", or "none" (no
  /// estimator).
  std::string origin = "table";
  /// The measured runs of the same op on this device behind a learned one.
  std::size_t learned_runs = 0;
};

/// Maps a workload to its estimate. Registered per (family, op, backend); "*"
/// as the backend (or op) is a fallback for any. Throws InvalidArgument for a
/// workload it cannot answer.
using Estimator = std::function<Estimate(const Workload&)>;

/// The registry key of an estimator.
struct EstimatorKey {
  std::string family;
  std::string op;
  std::string backend;

  std::string to_string() const;  ///< "qwen_image/vae_decode/cuda"
  bool operator<(const EstimatorKey& other) const;
  bool operator==(const EstimatorKey& other) const;
};

}  // namespace mold
