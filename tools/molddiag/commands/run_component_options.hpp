#pragma once
/// molddiag run-component's options, read and checked without libtorch:
/// molddiag refuses a bad command line itself and hands a good one to
/// molddiag-torch.

#include <cstdint>
#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct RunComponentRequest {
  mold::tools::HostOptions host;
  std::string family, component, arch = "tiny", weights, input, output;
  std::string dtype = "float32";
  std::uint64_t seed = 0;
  bool json = false, verbose = false;
};

/// Parses molddiag run-component's arguments; throws tools::UsageError naming
/// the flag.
mold::tools::Parsed<RunComponentRequest> parse_run_component_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
