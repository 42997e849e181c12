#include "common/image_input.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/runtime/png.hpp>
#include <system_error>

namespace mold::tools {

at::Tensor decode_source_image(const std::string& name, std::string_view png) {
  const mold::PngImage image = mold::decode_png(name, png);
  at::Tensor hwc = at::empty({image.height, image.width, 3}, at::kByte);
  std::memcpy(hwc.data_ptr<std::uint8_t>(), image.rgb.data(), image.rgb.size());
  return hwc.permute({2, 0, 1}).contiguous();
}

}  // namespace mold::tools
