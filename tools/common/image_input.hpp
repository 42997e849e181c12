#pragma once
// The images an edit starts from: PNG files named by mold run --image (and
// molddiag's profiler), or PNG bytes sent with a request to mold serve, as
// (3, H, W) uint8 RGB.

#include <ATen/ATen.h>

#include <string>
#include <string_view>

namespace mold::tools {

/// The most bytes a source image file may have (a 16384^2 RGB PNG stored
/// uncompressed is 768 MiB; a real photo is far smaller).
inline constexpr std::size_t kMaxSourceImageBytes = std::size_t{256} << 20;

/// The bytes of `path`. Throws mold::InvalidArgument naming `flag` and the
/// path when it is not a regular readable file or is larger than
/// kMaxSourceImageBytes.
std::string read_image_file(const std::string& path, const char* flag);

/// PNG bytes as (3, H, W) uint8 RGB (alpha dropped, gray made RGB, 16-bit
/// reduced). Throws mold::Error naming `name` for anything that is not a
/// PNG or does not decode.
at::Tensor decode_source_image(const std::string& name, std::string_view png);

}  // namespace mold::tools
