#include "mold/estimate/sequence_tables.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mold/base/error.hpp"

namespace mold {

SequenceTables::SequenceTables(const CalibrationFile& file,
                               const std::filesystem::path& path,
                               std::string_view family,
                               const std::vector<std::string>& ops)
    : tables_(file.sequence_models()), ops_(ops) {
  for (const std::string& op : ops)
    if (!file.find_sequence(op, "cpu"))
      throw ConfigError(
          path, 0, fmt::format("{}.cpu", op),
          fmt::format("is missing: the {} plugin needs a per-token table for "
                      "every op it estimates on the cpu backend (the "
                      "fallback for other backends)",
                      family));
}

const SequenceModel& SequenceTables::table(std::string_view op,
                                           std::string_view backend) const {
  if (std::find(ops_.begin(), ops_.end(), op) == ops_.end())
    throw InvalidArgument(
        fmt::format("no per-token table for op '{}' was asked for", op));
  const SequenceModel* cpu = nullptr;
  for (const auto& t : tables_) {
    if (t.op != op) continue;
    if (t.backend == backend) return t;
    if (t.backend == "cpu") cpu = &t;
  }
  return *cpu;  // the constructor checked it is there
}

}  // namespace mold
