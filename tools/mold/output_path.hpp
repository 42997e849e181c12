#pragma once
// Where mold run writes its images, locally or from a server: names that
// never replace an earlier image. Torch-free.

#include <cstdint>
#include <filesystem>
#include <string>

namespace mold_cli {

/// `dir/<model>-<seed>.png`, or `-2`, `-3`, ... before the extension when
/// that name (or, with `with_tensors`, the `.safetensors` beside it) is taken:
/// an earlier output is never replaced. Creates `dir` when missing; throws
/// mold::InvalidArgument when it is not a directory.
std::filesystem::path choose_output_path(const std::filesystem::path& dir,
                                         const std::string& model,
                                         std::uint64_t seed,
                                         bool with_tensors = false);

}  // namespace mold_cli
