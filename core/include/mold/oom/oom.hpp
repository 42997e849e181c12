#pragma once
/// Out-of-memory errors: where an error happened, and what a classifier made of
/// it.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mold/base/bytes.hpp"

namespace mold {

struct Workload;

/// Where an error happened. The label of an OOM follows this, never the
/// platform the client was compiled for (incident 1 of docs/incidents.md: a
/// remote CUDA OOM shown on a Mac as "Metal").
struct Origin {
  enum class Kind { local, remote };
  Kind kind = Kind::local;
  std::string host;         ///< "gpu-box:7680" for remote, empty for local
  std::string backend;      ///< "cuda", "metal", ...; empty when unknown
  std::string device_name;  ///< "NVIDIA H200"; empty when unknown
};

/// An error as it reached mold.
struct ErrorContext {
  std::string message;         ///< the full text, backtraces and all
  std::string exception_kind;  ///< "c10::OutOfMemoryError", "std::bad_alloc",
                               ///< "http 500"
  Origin origin;
};

/// What a classifier recognised. Absent numbers stay nullopt: never guessed.
struct OomReport {
  /// The backend that ran out: "cuda", "rocm", "mps", "metal", "cpu", "xpu", or
  /// "unknown" when neither the text nor the origin says.
  std::string backend;
  std::string device;      ///< "GPU 0", "CUDA0", "" when the text does not say
  Origin origin;           ///< copied from the ErrorContext
  std::string classifier;  ///< name of the classifier that recognised it
  std::optional<Bytes> requested;  ///< the allocation that failed
  std::optional<Bytes> capacity;   ///< device total, or the allocator's limit
  /// A memory limit the user configured (the cpu backend's
  /// --cpu-memory-limit) when that is what ran out, not the hardware.
  std::optional<Bytes> limit;
  std::optional<Bytes> free;       ///< free on the device when it failed
  std::optional<Bytes> allocated;  ///< in live tensors of the framework
  /// Held by the framework's allocator but not in live tensors (a cache that
  /// fragmentation can make unusable for a large request).
  std::optional<Bytes> reserved_unallocated;
  /// This process's use including non-framework memory (CUDA context, other
  /// libraries).
  std::optional<Bytes> process_in_use;
  /// Used by other processes on the same device.
  std::optional<Bytes> other_processes;
  /// MPS: memory of other allocations (not PyTorch's) counted against the
  /// limit.
  std::optional<Bytes> other_allocations;
  std::string pool;  ///< MPS: "private" or "shared"
  /// Reserved-but-unallocated memory would have covered the request, or is a
  /// large share
  /// (>= 20%) of capacity: the failure is (partly) fragmentation.
  bool fragmentation = false;
  std::string message;      ///< cleaned: no backtraces
  std::string raw_message;  ///< as received
};

/// Sets `fragmentation` from the report's numbers (the rule documented on the
/// field).
void assess_fragmentation(OomReport& report);

/// Classifier priorities: the registry asks classifiers in this order (then
/// load order), so a text with a backend's own OOM marker is never claimed by
/// an inference from a passing mention ("If you encounter CUDA out of memory,
/// ..." in a CPU error).
inline constexpr int kSpecificClassifier = 100;  ///< a backend's own OOM texts
inline constexpr int kInferringClassifier =
    50;  ///< "out of memory" + a backend's name
inline constexpr int kFallbackClassifier = 0;  ///< any "out of memory"

/// Recognises one backend's OOM texts; nullopt for anything else (including
/// errors that merely look like OOMs: illegal memory access, timeouts, paths
/// with "out-of-memory").
using OomClassifier =
    std::function<std::optional<OomReport>(const ErrorContext&)>;

/// Hints a family plugin adds for an OOM in a workload of its family ("for
/// edits, resize the source image").
using HintProvider =
    std::function<std::vector<std::string>(const OomReport&, const Workload&)>;

/// Hints a backend plugin adds for an OOM on its backend: what only that
/// backend knows (CUDA's expandable_segments, ROCm's eviction, MPS's
/// watermark). `workload` is the failed operation, or null when unknown.
using BackendHintProvider = std::function<std::vector<std::string>(
    const OomReport&, const Workload* workload)>;

}  // namespace mold
