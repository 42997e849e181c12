#pragma once
/// What one device was measured to need: every completed phase's working
/// peak with its workload, one JSON line each, in a file per device under
/// `$XDG_STATE_HOME/mold/history/` (or `~/.local/state/mold/history/`).
/// The learned estimates (learned_estimate.hpp) read it.
///
/// The file is append-only and bounded: past `max_bytes` the oldest half is
/// dropped (the newest lines are rewritten beside it and renamed over it).
/// Appends and that rewrite hold a lock on `FILE.lock`, so that two
/// processes writing at once lose neither's lines. Reading never fails a
/// run: a line that is not one of ours (corrupt, truncated, another
/// version, another device's) is skipped and counted, a file that is not a
/// regular file (a FIFO, a device) is not opened, and a file larger than
/// the bound is read from its last `max_bytes`.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

/// One measured phase.
struct MeasuredPhase {
  Workload workload;
  /// The working peak: what the phase needed above what was there when it
  /// started (the larger of the allocated and the reserved peak above their
  /// start: a caching allocator's reserved peak is what its free memory is
  /// checked against). For a lower bound: the failed allocation's bytes.
  Bytes peak = 0;
  /// A failed phase: `peak` is the allocation that did not fit, so the
  /// phase needs at least that; it floors its own workload's estimate and
  /// is never fitted.
  bool lower_bound = false;
  /// The estimate's terms that no constant scales and that are exact counts
  /// (the threads' scratch, a dequantization buffer): the fit covers the
  /// peak without them.
  Bytes unfitted = 0;
  /// (constant, basis) of each of the estimate's terms a constant scales.
  std::vector<std::pair<std::string, double>> bases;
  std::int64_t time = 0;  ///< seconds since the epoch
  std::string by;         ///< "mold run", "mold serve", "molddiag leak", ...
};

/// Whether a phase measured for `measured` teaches the estimate of
/// `workload`: the same family, model, op, architecture, quantization and
/// backend (sizes, dtype, tokens and images may differ: the estimate's
/// bases carry them).
bool learns_from(const Workload& measured, const Workload& workload);

class MeasuredHistory {
 public:
  /// 2 MiB: about 5,000 phases.
  static constexpr std::uintmax_t kDefaultMaxBytes = 2u << 20;
  /// Lines longer than this are skipped unread.
  static constexpr std::size_t kMaxLineBytes = 16u << 10;

  /// `$XDG_STATE_HOME/mold/history`, else `$HOME/.local/state/mold/history`;
  /// empty when neither is set.
  static std::filesystem::path default_directory();
  /// The (backend, device) the first readable line of `file` names; nullopt
  /// when none does (or it is not a regular file).
  static std::optional<std::pair<std::string, std::string>> owner(
      const std::filesystem::path& file);
  /// The file of one device in `directory`: "cpu-Intel-R-Xeon-R.jsonl".
  static std::filesystem::path file_for(const std::filesystem::path& directory,
                                        const std::string& backend,
                                        const std::string& device);

  /// The history of `device` on `backend` in `file` (read now; a missing
  /// file is an empty history). Never throws for what the file holds.
  MeasuredHistory(std::filesystem::path file, std::string backend,
                  std::string device,
                  std::uintmax_t max_bytes = kDefaultMaxBytes);

  const std::filesystem::path& file() const { return file_; }
  const std::string& backend() const { return backend_; }
  const std::string& device() const { return device_; }

  /// Every phase read or appended, oldest first.
  std::vector<MeasuredPhase> phases() const;
  /// Those that learn `workload`'s estimate (learns_from), oldest first.
  std::vector<MeasuredPhase> phases_like(const Workload& workload) const;
  /// Lines skipped when reading: not JSON, not a phase, another version,
  /// backend or device.
  std::size_t skipped() const;
  /// Why the file could not be read or written (empty when it could): the
  /// history then holds what this process measured only.
  std::string problem() const;

  /// Adds `phase` (its workload validated; one of another backend is
  /// refused by InvalidArgument) and appends it to the file. A file that
  /// cannot be written keeps the phase in memory and sets problem().
  void append(MeasuredPhase phase);
  /// Keeps the phases `keep` says yes to, rewrites the file with them
  /// (atomically, under the lock) and returns how many were dropped.
  std::size_t prune(const std::function<bool(const MeasuredPhase&)>& keep);

  /// The JSON line of a phase, without its newline.
  std::string line_of(const MeasuredPhase& phase) const;

 private:
  void read_file();
  std::string rewrite_under_lock(const std::vector<MeasuredPhase>& phases);

  std::filesystem::path file_;
  std::string backend_;
  std::string device_;
  std::uintmax_t max_bytes_;
  mutable std::mutex mutex_;
  std::vector<MeasuredPhase> phases_;
  std::size_t skipped_ = 0;
  std::string problem_;
};

}  // namespace mold
