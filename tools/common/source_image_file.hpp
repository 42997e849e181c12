#pragma once
// The images an edit starts from, as files: read whole and bounded, to be sent
// to a server as they are or decoded here (image_input.hpp). Torch-free.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mold::tools {

/// The most bytes a source image file may have (a 16384^2 RGB PNG stored
/// uncompressed is 768 MiB; a real photo is far smaller).
inline constexpr std::size_t kMaxSourceImageBytes = std::size_t{256} << 20;

/// The most source images a request may have (the edit models take up to 8):
/// checked before any file is read.
inline constexpr std::size_t kMaxSourceImages = 8;

/// The most pixels one source image may have (8192 x 8192; a 24-megapixel
/// photo passes), and all of a request's together: the pipelines resize them to
/// about a megapixel, and decoding more only costs memory and time.
inline constexpr std::uint64_t kMaxSourceImagePixels = std::uint64_t{1} << 26;
inline constexpr std::uint64_t kMaxSourcePixelsTotal = std::uint64_t{1} << 27;

/// An edit's source image as PNG bytes, and its name in messages ("images[2]",
/// a file's path).
struct NamedPng {
  std::string name;
  std::string_view png;
};

/// Checks every image's size in its PNG header against kMaxSourceImagePixels
/// and their sum against kMaxSourcePixelsTotal, before any is decoded. Throws
/// mold::InvalidArgument naming the image, its size and the budget; an image
/// that is no PNG is left to the decoder's message.
void check_source_image_budget(const std::vector<NamedPng>& images);

/// The bytes of `path`. Throws mold::InvalidArgument naming `flag` and the
/// path when it is not a regular readable file or is larger than
/// kMaxSourceImageBytes.
std::string read_image_file(const std::string& path, const char* flag);

}  // namespace mold::tools
