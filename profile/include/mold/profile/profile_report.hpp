#pragma once
/// The profile and its analyses as JSON (schema in docs/profiler.md; the
/// "schema" field is its version).

#include <string>

#include "mold/profile/leak_analysis.hpp"
#include "mold/profile/memory_profile.hpp"
#include "mold/profile/parity.hpp"

namespace mold {

inline constexpr int kProfileSchema = 1;

/// `leak` and `parity` may be null (left out).
std::string profile_json(const MemoryProfile& profile, const LeakReport* leak,
                         const ParityReport* parity);

/// The profile a JSON report holds (its images, phases and the residue at the
/// end), for analysing it again (molddiag report). Throws ParseError naming
/// the field for a report that is not schema kProfileSchema or is malformed.
MemoryProfile profile_from_json(const std::string& text);

}  // namespace mold
