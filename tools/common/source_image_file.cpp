#include "common/source_image_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/runtime/png.hpp>
#include <system_error>

namespace mold::tools {

void check_source_image_budget(const std::vector<NamedPng>& images) {
  std::uint64_t total = 0;
  for (const NamedPng& image : images) {
    mold::PngSize size;
    try {
      size = mold::png_size(image.name, image.png);
    } catch (const mold::Error&) {
      continue;  // not a PNG: the decoder says so, naming it
    }
    const std::uint64_t pixels = std::uint64_t(size.width) * size.height;
    if (pixels > kMaxSourceImagePixels)
      throw mold::InvalidArgument(fmt::format(
          "{}: a {}x{} image ({} pixels); a source image may have at most {} "
          "pixels (8192x8192): scale it down first, the model works at about "
          "a megapixel",
          image.name, size.width, size.height, pixels, kMaxSourceImagePixels));
    total += pixels;
    if (total > kMaxSourcePixelsTotal)
      throw mold::InvalidArgument(fmt::format(
          "{}: the source images up to this one have {} pixels; a request's "
          "together may have at most {}: send fewer or smaller images",
          image.name, total, kMaxSourcePixelsTotal));
  }
}

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
