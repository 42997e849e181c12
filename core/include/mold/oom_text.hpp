#pragma once
/// Helpers for OOM classifiers: finding numbers in error texts and cleaning
/// them.

#include <optional>
#include <string>
#include <string_view>

#include "mold/bytes.hpp"

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

/// Case-insensitive substring test.
bool contains_nocase(std::string_view text, std::string_view needle);

/// The text without backtraces: c10 "Exception raised from ... frame #N" lists,
/// Python tracebacks, Rust/anyhow "Stack backtrace:" frames. Trims blank lines
/// at the ends.
std::string strip_backtrace(std::string_view text);

}  // namespace mold
