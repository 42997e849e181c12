#pragma once
/// A family's per-token tables (mold/estimate/sequence_model.hpp) from its
/// calibration file, looked up by op and backend: a backend nobody measured
/// takes the cpu table (its estimate then says it is not calibrated there).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mold/estimate/calibration.hpp"
#include "mold/estimate/sequence_model.hpp"

namespace mold {

class SequenceTables {
 public:
  /// Throws ConfigError naming `path` and the table when one of `ops` has
  /// no cpu table in `file`: the plugin `family` needs one for every op it
  /// estimates per token.
  SequenceTables(const CalibrationFile& file, const std::filesystem::path& path,
                 std::string_view family, const std::vector<std::string>& ops);

  /// The table of (op, backend), or (op, cpu); InvalidArgument for an op the
  /// constructor was not given.
  const SequenceModel& table(std::string_view op,
                             std::string_view backend) const;

 private:
  std::vector<SequenceModel> tables_;
  std::vector<std::string> ops_;
};

}  // namespace mold
