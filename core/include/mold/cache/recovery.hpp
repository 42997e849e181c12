#pragma once
/// The recovery ladder of one operation: try the exact, fastest way first, and
/// on a recognised out-of-memory error fall back to ways that need less memory
/// (bounded convolution workspaces, then tiles, then the CPU), never losing the
/// result and never hiding an unrelated error (incident 2, docs/incidents.md).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/device/backend.hpp"
#include "mold/oom/oom.hpp"

namespace mold {

/// One way to run the operation.
struct RecoveryRung {
  std::string name;  ///< "whole", "bounded", "tiles_64", "cpu"
  /// Where it runs; its memory is read to predict and to clean up.
  std::shared_ptr<Backend> backend;
  /// Its working memory, when estimated: a rung that cannot fit the free memory
  /// is skipped without being tried.
  std::optional<Bytes> working_bytes;
  /// Runs the operation, keeping the result in the caller's hands. Throws on
  /// failure.
  std::function<void()> run;
  /// Checks the result after the device finished (e.g. finite, not all zeros);
  /// throws InvalidOutput when it is not a result. May be empty.
  std::function<void()> validate;
};

/// A result that is not one: non-finite values, or all zeros where the input
/// was not
/// ("silent zero output", incident 2 of docs/incidents.md). The rung failed;
/// the ladder goes on.
class InvalidOutput : public Error {
 public:
  using Error::Error;
};

/// What happened on one rung.
struct RecoveryAttempt {
  enum class Outcome {
    succeeded,
    out_of_memory,   ///< a recognised OOM: the ladder moved on
    invalid_output,  ///< ran but produced no valid result: the ladder moved on
    skipped,         ///< its estimate did not fit the free memory: not tried
  };
  std::string rung;
  Outcome outcome = Outcome::skipped;
  double seconds = 0;
  Bytes peak_bytes =
      0;              ///< the backend's peak allocated bytes during the attempt
  std::string error;  ///< the error's text (cleaned), or why it was skipped
  std::string
      cleanup_error;  ///< empty_cache/synchronize failure after it, if any
  std::optional<OomReport> oom;
};
std::string_view to_string(RecoveryAttempt::Outcome outcome);

struct RecoveryResult {
  std::string rung;  ///< the rung that produced the result
  std::vector<RecoveryAttempt> attempts;
};

/// Every rung failed with an OOM or an invalid output, or was skipped. Carries
/// the attempts, and the last OOM report when there was one.
class RecoveryFailed : public Error {
 public:
  RecoveryFailed(std::string operation, std::vector<RecoveryAttempt> attempts);
  const std::vector<RecoveryAttempt>& attempts() const { return attempts_; }
  /// The last recognised OOM, if any rung hit one.
  const OomReport* last_oom() const;

 private:
  std::vector<RecoveryAttempt> attempts_;
};

/// Runs ladders, recognising OOMs with `classify` (the registry's classifiers:
/// Registry::classifier()).
class RecoveryPolicy {
 public:
  explicit RecoveryPolicy(OomClassifier classify);

  /// Tries the rungs in order. Each attempt ends with
  /// backend.synchronize_and_check() and validate(). A recognised OOM or an
  /// InvalidOutput moves to the next rung after empty_cache() +
  /// synchronize_and_check() (whose failure is recorded and cannot stop the
  /// fallback); any other error propagates at once, unchanged. Throws
  /// RecoveryFailed when no rung produced a result.
  RecoveryResult run(const std::string& operation,
                     const std::vector<RecoveryRung>& rungs) const;

 private:
  OomClassifier classify_;
};

}  // namespace mold
