#pragma once
/// molddiag vae's options, read and checked without libtorch: molddiag refuses
/// a bad command line itself and hands a good one to molddiag-torch.

#include <cstdint>
#include <mold/plan/vae_settings.hpp>
#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct VaeRequest {
  mold::tools::HostOptions host;
  std::string family, weights, input_path, output_path,
      mode = "whole", backend = "cpu", arch = "default";
  std::uint64_t seed = 0;
  bool raw_latent = false, json = false, verbose = false;
  /// How to run it (run() reads the input).
  mold::VaeSettings settings;
};

/// Parses molddiag vae's arguments; throws tools::UsageError naming the flag.
mold::tools::Parsed<VaeRequest> parse_vae_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
