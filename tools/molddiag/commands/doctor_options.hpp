#pragma once
/// molddiag doctor's options, read and checked without libtorch: molddiag
/// refuses a bad command line itself and hands a good one to molddiag-torch.

#include <cstdint>
#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct DoctorRequest {
  mold::tools::HostOptions host;
  bool json = false;
  bool strict = false;
  bool gemm = true;
  /// The timed product: [rows, in] by [out, in] (mold::GemmShape).
  std::int64_t gemm_rows = 256, gemm_in = 1024, gemm_out = 1024;
};

/// Parses molddiag doctor's arguments; throws tools::UsageError naming the
/// flag.
mold::tools::Parsed<DoctorRequest> parse_doctor_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
