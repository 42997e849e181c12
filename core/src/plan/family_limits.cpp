#include "mold/plan/family_limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "mold/base/error.hpp"
#include "mold/plan/generate_schema.hpp"

namespace mold {

void check_family_limits(const GenerateSettings& resolved,
                         const FamilyLimits& limits) {
  const int multiple = limits.size_multiple;
  for (const auto* name : {"width", "height"}) {
    const GenerateField& field = *find_generate_field(name);
    const int value = resolved.*std::get<int GenerateSettings::*>(field.member);
    const int high =
        std::min(int(field.high), limits.max_side) / multiple * multiple;
    if (value < multiple || value > high || value % multiple)
      throw InvalidArgument(fmt::format(
          "{} {}: {} makes images whose sides are multiples of {} from {} to "
          "{}; try {}",
          field_label(field.name, resolved.naming), value, limits.family,
          multiple, multiple, high,
          std::clamp((value + multiple / 2) / multiple * multiple, multiple,
                     high)));
  }
  if (resolved.steps < limits.min_steps)
    throw InvalidArgument(
        fmt::format("{} {}: {} takes at least {} steps{}",
                    field_label("steps", resolved.naming), resolved.steps,
                    limits.family, limits.min_steps,
                    limits.min_steps_reason.empty()
                        ? ""
                        : fmt::format(" ({})", limits.min_steps_reason)));
  check_generate_settings(resolved);
}

}  // namespace mold
