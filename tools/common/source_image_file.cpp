#include "common/source_image_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <system_error>

namespace mold::tools {

std::string read_image_file(const std::string& path, const char* flag) {
  try {
    mold::require_regular_input(path, "image");
  } catch (const mold::Error& e) {
    throw mold::InvalidArgument(fmt::format("{} {}: {}", flag, path, e.what()));
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec)
    throw mold::InvalidArgument(fmt::format("{} {}: cannot read its size: {}",
                                            flag, path, ec.message()));
  if (size > kMaxSourceImageBytes)
    throw mold::InvalidArgument(
        fmt::format("{} {}: {} bytes; a source image may have at most {} MiB",
                    flag, path, size, kMaxSourceImageBytes >> 20));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in || !in.read(bytes.data(), std::streamsize(size)))
    throw mold::InvalidArgument(fmt::format("{} {}: cannot read it: {}", flag,
                                            path, std::strerror(errno)));
  return bytes;
}

}  // namespace mold::tools
