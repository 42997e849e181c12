#pragma once
/// Rewriting one table of a TOML file in place, as `molddiag calibrate
/// --write` updates a calibration file: the rest of the file, comments
/// included, stays as it was. Torch-free.

#include <filesystem>
#include <string>

namespace mold {

/// Replaces the `[table]` block of `file` (from its header up to the next
/// table header, leaving the comment lines that introduce that next table in
/// place) with `block`, or appends `block` after an empty line when the file
/// has no such table. Written atomically (write_file_atomically). Throws Error
/// naming the file when it cannot be read or written; `what` names it in
/// messages ("--write").
void replace_toml_table(const std::filesystem::path& file,
                        const std::string& table, const std::string& block,
                        const std::string& what);

}  // namespace mold
