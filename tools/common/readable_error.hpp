#pragma once
/// How the tools' tensor commands (molddiag vae, tiling, calibrate; mold run)
/// report what libtorch throws: an out-of-memory error the registry recognises
/// is printed as `molddiag classify` prints one (the label, the numbers, the
/// message, then the hints), any other libtorch error without its C++
/// backtrace. The header is torch-free; the implementation catches c10::Error.

#include <mold/estimate/workload.hpp>
#include <mold/oom/oom.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mold {
class Registry;
}  // namespace mold

namespace mold::tools {

/// The lines `molddiag classify` prints for an out-of-memory error: the label,
/// the numbers the report has, the message, and "Try:" with one hint a line
/// (left out when there are none); lines end with a newline but the last.
/// Control characters are escaped (mold::escape_control).
std::string oom_text(const mold::OomReport& report,
                     const std::vector<std::string>& hints);

/// What a tensor command was doing, for the message when it fails.
struct FailureContext {
  const mold::Registry* registry = nullptr;  ///< for classifying and advising
  std::string backend = "cpu";               ///< where it ran
  std::string device;  ///< the backend's device name, for the label
  /// The operation, for hints with numbers; only where the registered
  /// estimators describe the model (the published architecture).
  std::optional<mold::Workload> workload;
  /// The command's own hints, after the registry's (e.g. "--mode ladder").
  std::vector<std::string> extra_hints;
  /// Keep libtorch's full text, backtrace included (--verbose).
  bool verbose = false;
  /// Where it ran, for the label and hints: a server names itself remote
  /// (the host its client used), so hints speak of "the server". backend and
  /// device above fill origin.backend and origin.device_name.
  mold::Origin origin;
};

/// The exception in flight as a person (or a client of the server) should
/// see it: what rethrow_readable() would say, with the out-of-memory report
/// and hints apart when there is one.
struct DescribedFailure {
  std::string message;  ///< oom_text() for an OOM; else the readable text
  std::optional<mold::OomReport> oom;
  std::vector<std::string> hints;  ///< for `oom`
  std::string exception_kind;      ///< "c10::OutOfMemoryError", ...
};
/// Call in a catch block. Never throws for what rethrow_readable handles;
/// anything that is not a std::exception is "unknown error".
DescribedFailure describe_failure(const FailureContext& context);

/// Call in a catch block: rethrows the exception in flight as one a person
/// can read. A libtorch error or std::bad_alloc the registry classifies as an
/// out-of-memory error becomes a mold::Error with oom_text() (label, numbers,
/// message, hints from mold::advise and `extra_hints`); any other libtorch
/// error a mold::Error with its text without the backtrace (the full text with
/// `verbose`); a RecoveryFailed whose attempts hit an out-of-memory error gets
/// oom_text() of the last one after its list. Anything else is rethrown as it
/// is.
[[noreturn]] void rethrow_readable(const FailureContext& context);

}  // namespace mold::tools
