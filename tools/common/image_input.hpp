#pragma once
// The images an edit starts from: PNG files named by mold run --image (and
// molddiag's profiler), or PNG bytes sent with a request to mold serve, as
// (3, H, W) uint8 RGB.

#include <ATen/ATen.h>

#include <string>
#include <string_view>

#include "common/source_image_file.hpp"

namespace mold::tools {

/// PNG bytes as (3, H, W) uint8 RGB (alpha dropped, gray made RGB, 16-bit
/// reduced). Throws mold::Error naming `name` for anything that is not a
/// PNG or does not decode.
at::Tensor decode_source_image(const std::string& name, std::string_view png);

}  // namespace mold::tools
