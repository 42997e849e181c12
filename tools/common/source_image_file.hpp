#pragma once
// The images an edit starts from, as files: read whole and bounded, to be sent
// to a server as they are or decoded here (image_input.hpp). Torch-free.

#include <cstddef>
#include <string>

namespace mold::tools {

/// The most bytes a source image file may have (a 16384^2 RGB PNG stored
/// uncompressed is 768 MiB; a real photo is far smaller).
inline constexpr std::size_t kMaxSourceImageBytes = std::size_t{256} << 20;

/// The bytes of `path`. Throws mold::InvalidArgument naming `flag` and the
/// path when it is not a regular readable file or is larger than
/// kMaxSourceImageBytes.
std::string read_image_file(const std::string& path, const char* flag);

}  // namespace mold::tools
