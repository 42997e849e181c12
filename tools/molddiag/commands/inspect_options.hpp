#pragma once
/// molddiag inspect's options, read and checked without libtorch: molddiag
/// refuses a bad command line itself and hands a good one to molddiag-torch,
/// which builds each fitted component (shapes only) to check the file against.

#include <string>
#include <vector>

#include "common/options.hpp"

namespace molddiag {

struct InspectRequest {
  mold::tools::HostOptions host;
  std::vector<std::string> files;
  /// The architecture the tensors are checked against: "default" (the
  /// published one, as mold run reads a component file) or "tiny".
  std::string arch = "default";
  bool json = false;
};

/// Parses molddiag inspect's arguments; throws tools::UsageError naming the
/// flag.
mold::tools::Parsed<InspectRequest> parse_inspect_options(
    const std::vector<std::string>& args);

}  // namespace molddiag
