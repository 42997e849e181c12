#pragma once
// Reads a shared library's ELF headers and dynamic symbol table without loading
// it, so that a foreign library (another program's .so in a plugin directory,
// a library for another CPU) is refused before any of its code runs.

#include <filesystem>
#include <optional>
#include <string>

namespace mold {

struct ElfInspection {
  /// Whether this platform's libraries are ELF and the file was inspected;
  /// false elsewhere (the loader's own checks decide).
  bool inspected = false;
  /// Not an ELF file at all (a text file, a truncated download).
  bool is_elf = false;
  /// Set when the file is ELF but not loadable here: "an ELF file for aarch64
  /// (this is x86_64)", "a 32-bit ELF file", "not a shared library".
  std::string mismatch;
  /// Whether the dynamic symbol table defines `symbol` (exported, not
  /// undefined); nullopt when it cannot be told (no section headers).
  std::optional<bool> defines_symbol;
};

/// Inspects `path` for `symbol`. Never throws: what a malformed file does not
/// let it read is left unknown; an unreadable file is is_elf = false with
/// `mismatch` naming the reason.
ElfInspection inspect_elf(const std::filesystem::path& path,
                          const std::string& symbol);

}  // namespace mold
