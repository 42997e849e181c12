#pragma once
/// The profile and its analyses as one self-contained HTML file: no network,
/// no script, the charts inline SVG. Memory after each image (allocated,
/// reserved, host RSS, the warm-up shaded), each phase's peak per image (as
/// measured, and beyond the resident weights), each phase's estimate against
/// its measured working peak, the verdict, the attribution, parked holdings
/// and parity. Stays small: about 60 bytes per image per series.

#include <string>

#include "mold/profile/leak_analysis.hpp"
#include "mold/profile/memory_profile.hpp"
#include "mold/profile/parity.hpp"

namespace mold {

/// `leak` and `parity` may be null (their sections are left out).
std::string profile_html(const MemoryProfile& profile, const LeakReport* leak,
                         const ParityReport* parity);

/// `text` with &, <, >, " and ' escaped for HTML text and attributes.
std::string html_escape(const std::string& text);

}  // namespace mold
