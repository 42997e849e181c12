#pragma once
/// What a family allows beyond the request schema's ranges: image sides in
/// multiples of its latent patch, a least step count. Each pipeline's
/// resolve() fills in its defaults, then calls check_family_limits(), so the
/// schema's ranges are checked in one place for every family. Torch-free.

#include <string_view>

#include "mold/plan/generate_settings.hpp"

namespace mold {

struct FamilyLimits {
  std::string_view family;  ///< "Z-Image": as messages name it
  int size_multiple = 16;   ///< image sides are multiples of this
  int max_side = 16384;     ///< and at most this (the schema's 16384 or less)
  int min_steps = 1;
  /// Why min_steps is more than 1, for the message ("Qwen-Image's schedule
  /// ends at shift_terminal 0.02, which takes at least 2").
  std::string_view min_steps_reason;
};

/// Checks a resolved request (every default filled in): the schema's ranges
/// (check_generate_settings), sides that are multiples of
/// limits.size_multiple, at least limits.min_steps. Throws InvalidArgument
/// naming the flag, the value and a value that would do.
void check_family_limits(const GenerateSettings& resolved,
                         const FamilyLimits& limits);

}  // namespace mold
