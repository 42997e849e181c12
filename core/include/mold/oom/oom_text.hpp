#pragma once
/// Helpers for OOM classifiers: finding numbers in error texts and cleaning
/// them.

#include <optional>
#include <string>
#include <string_view>

#include "mold/base/bytes.hpp"
#include "mold/oom/oom.hpp"

namespace mold {

/// The byte count written right after the first `marker` in `text`: for marker
/// "Tried to allocate " in "... Tried to allocate 20.00 MiB (GPU 0; ..." -> 20
/// MiB. Reads a number, optional space, optional unit (B, KiB, MiB, GiB, KB,
/// MB, GB, bytes).
std::optional<Bytes> bytes_after(std::string_view text,
                                 std::string_view marker);

/// The byte count written right before the first `marker`: for marker " total
/// capacity" in "(GPU 0; 7.79 GiB total capacity; ..." -> 7.79 GiB.
std::optional<Bytes> bytes_before(std::string_view text,
                                  std::string_view marker);

/// A report for `error` on `backend`: origin, raw message and the message
/// without backtraces filled in; numbers left for the classifier.
OomReport start_report(const ErrorContext& error, std::string backend);

/// The text with every run of whitespace (newlines included) made one space,
/// for matching markers that a paste or a log prefix broke across lines.
std::string collapse_whitespace(std::string_view text);

/// Reads the numbers of PyTorch's caching-allocator OOM text (CUDA, HIP, XPU)
/// into `report`: requested, capacity, free, allocated,
/// reserved-but-unallocated, this process's use and other processes', in both
/// the current format ("GPU 0 has a total capacity of ... of which ... is
/// free") and the older one ("(GPU 0; ... total capacity;
/// ... already allocated; ... free; ... reserved in total by PyTorch)" or "...
/// cached)"), then sets `fragmentation`. Leaves fields the text does not give
/// untouched.
void read_pytorch_allocator_numbers(std::string_view text, OomReport& report);

/// "GPU 0" from "... GPU 0 has a total ..." or "(GPU 0; ..."; empty when
/// absent.
std::string pytorch_gpu_device(std::string_view text);

/// Case-insensitive substring test.
bool contains_nocase(std::string_view text, std::string_view needle);

/// The text without backtraces: c10 "Exception raised from ... frame #N" lists,
/// Python tracebacks, Rust/anyhow "Stack backtrace:" frames. Trims blank lines
/// at the ends.
std::string strip_backtrace(std::string_view text);

}  // namespace mold
