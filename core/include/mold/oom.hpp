#pragma once
/// Out-of-memory errors: where an error happened, and what a classifier made of
/// it.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mold/bytes.hpp"

namespace mold {

struct Workload;

/// Where an error happened. The label of an OOM follows this, never the
/// platform the client was compiled for (seed 000: a remote CUDA OOM shown on a
/// Mac as "Metal").
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
  std::string
      backend;         ///< the backend that ran out: "cuda", "rocm", "mps", ...
  std::string device;  ///< "GPU 0", "NVIDIA H200", "" when unknown
  Origin origin;       ///< copied from the ErrorContext
  std::string classifier;  ///< name of the classifier that recognised it
  std::optional<Bytes> requested;
  std::optional<Bytes> capacity;
  std::optional<Bytes> free;
  std::optional<Bytes> allocated;  ///< by the framework
  std::optional<Bytes>
      reserved_unallocated;  ///< cached by the allocator, not in use
  bool fragmentation = false;
  std::string message;      ///< cleaned: no backtraces
  std::string raw_message;  ///< as received
};

/// Recognises one backend's OOM texts; nullopt for anything else (including
/// errors that merely look like OOMs: illegal memory access, timeouts, paths
/// with "out-of-memory").
using OomClassifier =
    std::function<std::optional<OomReport>(const ErrorContext&)>;

/// Hints a plugin adds for an OOM in a workload: "--batch 1", "use
/// qwen-image:q4".
using HintProvider =
    std::function<std::vector<std::string>(const OomReport&, const Workload&)>;

}  // namespace mold
