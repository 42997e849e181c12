#include "output_path.hpp"

#include <fmt/format.h>

#include <cctype>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>

namespace mold_cli {

namespace fs = std::filesystem;

fs::path choose_output_path(const fs::path& dir, const std::string& model,
                            std::uint64_t seed, bool with_tensors) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      throw mold::InvalidArgument(
          fmt::format("--output {}: cannot create the directory ({})",
                      dir.string(), ec.message()));
  }
  if (!fs::is_directory(dir, ec))
    throw mold::InvalidArgument(
        fmt::format("--output {} is {}, not a directory: give a directory "
                    "for the images",
                    dir.string(), mold::describe_file_type(dir)));
  // Model names are the catalogue's ("z-image-turbo"); keep the file name
  // plain whatever a plugin calls its model.
  std::string stem;
  for (char c : model)
    stem += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
             c == '_' || c == '.')
                ? c
                : '_';
  for (int n = 1; n < 100000; ++n) {
    const fs::path candidate =
        dir / (n == 1 ? fmt::format("{}-{}.png", stem, seed)
                      : fmt::format("{}-{}-{}.png", stem, seed, n));
    fs::path tensors = candidate;
    tensors.replace_extension(".safetensors");
    if (!fs::exists(fs::symlink_status(candidate, ec)) &&
        !(with_tensors && fs::exists(fs::symlink_status(tensors, ec))))
      return candidate;
  }
  throw mold::InvalidArgument(fmt::format(
      "--output {}: every name for {}-{}.png is taken; clean it up or give "
      "another --output",
      dir.string(), stem, seed));
}

}  // namespace mold_cli
