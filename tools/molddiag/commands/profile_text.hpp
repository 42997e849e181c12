#pragma once
/// The text reports of molddiag leak and parity.

#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/memory_profile.hpp>
#include <mold/profile/parity.hpp>
#include <ostream>

namespace molddiag {

/// Per image: allocated, reserved, host RSS and the change.
void print_image_table(std::ostream& out, const mold::MemoryProfile& profile);
void print_leak_report(std::ostream& out, const mold::LeakReport& report);
void print_parity_report(std::ostream& out, const mold::ParityReport& report);

}  // namespace molddiag
