#pragma once
// The fuzz targets whose reader takes a path: each input is written to one
// scratch file per fuzzer process ($TMPDIR or /tmp), rewritten every time.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace mold_fuzz {

/// Writes `data` to this process's scratch file ending in `suffix` and
/// returns its path.
inline const std::string& write_scratch(const std::uint8_t* data,
                                        std::size_t size, const char* suffix) {
  static const std::string path = [suffix] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/mold-fuzz-" +
           std::to_string(::getpid()) + suffix;
  }();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

}  // namespace mold_fuzz
