#pragma once
/// The text reports of molddiag leak and parity.

#include <boost/program_options.hpp>
#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/memory_profile.hpp>
#include <mold/profile/parity.hpp>
#include <ostream>
#include <string>

namespace molddiag {

/// Per image: allocated, reserved, host RSS and the change.
void print_image_table(std::ostream& out, const mold::MemoryProfile& profile);
void print_leak_report(std::ostream& out, const mold::LeakReport& report);
void print_parity_report(std::ostream& out, const mold::ParityReport& report);

/// The analyses' rules as a person writes them on the command line.
struct AnalysisFlags {
  /// --threshold, --host-threshold ("": their defaults, read_analysis_options)
  std::string threshold;
  std::string host_threshold;
  std::string slack = "1 MiB";     ///< --slack
  double tolerance_percent = 1.0;  ///< --tolerance
};

/// Adds --threshold, --host-threshold and --max-warmup (when `leak` is
/// given: leak and report take them, parity does not), --tolerance and
/// --slack.
void add_analysis_options(boost::program_options::options_description& options,
                          AnalysisFlags& flags, mold::LeakOptions* leak);

/// The flags' values into the options (`leak` may be null). The defaults:
/// 4 KiB a image of device memory and 1 MiB of host memory; for a black box
/// (`black_box`: a process sampled from outside, whose figures move in pages
/// and allocator chunks) 256 KiB of both, and --threshold sets both unless
/// --host-threshold is given. Throws UsageError naming the flag and the
/// value: a byte count that is not one, a tolerance that is not 0 to 100
/// percent.
void read_analysis_options(const AnalysisFlags& flags, mold::LeakOptions* leak,
                           mold::ParityOptions& parity, bool black_box = false);

/// The black box's default threshold, host and device.
inline constexpr const char* kBlackBoxThreshold = "256 KiB";

/// Where a profile's reports go.
struct ProfileOutputs {
  bool json = false;      ///< the JSON report on stdout instead of the text
  std::string json_file;  ///< --report FILE ("": none)
  std::string html_file;  ///< --html FILE ("": none)
};

/// Analyses `profile` (leaks with `leak`, parity with `parity`; either may
/// be null), writes the files atomically, prints, and returns the exit code:
/// 3 leak, 4 parity broken, 5 undecided, 6 memory carried in (parity
/// alone: `leak` null), 1 too few
/// images, 0 otherwise (clean or bounded).
int report_profile(const mold::MemoryProfile& profile,
                   const mold::LeakOptions* leak,
                   const mold::ParityOptions* parity,
                   const ProfileOutputs& outputs);

}  // namespace molddiag
