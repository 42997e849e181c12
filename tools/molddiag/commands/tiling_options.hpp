#pragma once
/// molddiag tiling's options, read and checked without libtorch: molddiag
/// refuses a bad command line itself and hands a good one to molddiag-torch.

#include <cstdint>
#include <mold/base/bytes.hpp>
#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct TilingRequest {
  mold::tools::HostOptions host;
  std::string family, arch = "default";
  int size = 256;
  int tile = 0;     ///< after the default (half the latent) is applied
  int overlap = 0;  ///< after the default (tile / 4) is applied
  std::uint64_t seed = 0;
  mold::Bytes workspace_bound = 0;
  bool mkldnn = true, json = false, verbose = false;
};

/// Parses molddiag tiling's arguments; throws tools::UsageError naming the
/// flag.
mold::tools::Parsed<TilingRequest> parse_tiling_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
