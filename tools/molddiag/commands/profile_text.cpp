#include "profile_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <mold/base/file_io.hpp>
#include <mold/profile/html_report.hpp>
#include <mold/profile/profile_report.hpp>

#include "common/exit_codes.hpp"
#include "common/options.hpp"

namespace molddiag {

namespace {

void print_series(std::ostream& out, const char* label,
                  const mold::SeriesVerdict& v) {
  std::string shape = mold::to_string(v.shape);
  if (v.grows()) shape = "GROWS";
  // The bounded and undecided reasons start with their shape already.
  const std::string prefix = shape + ": ";
  const bool named = v.reason.compare(0, prefix.size(), prefix) == 0;
  out << fmt::format("{:<11} {}\n", label,
                     named ? v.reason : prefix + v.reason);
}

}  // namespace

void print_image_table(std::ostream& out, const mold::MemoryProfile& p) {
  out << fmt::format("{}\n{}, {} images\n\n", p.subject,
                     mold::describe_sampling(p), p.images.size());
  out << fmt::format("{:>5}  {:>14}  {:>12}  {:>14}  {:>14}\n", "image",
                     "allocated", "change", "reserved", "host RSS");
  for (std::size_t i = 0; i < p.images.size(); ++i) {
    const auto& img = p.images[i];
    const std::string change =
        i == 0 ? ""
               : mold::format_byte_change(
                     double(img.after.allocated) -
                         double(p.images[i - 1].after.allocated),
                     true);
    out << fmt::format("{:>5}  {:>14}  {:>12}  {:>14}  {:>14}\n", img.image + 1,
                       mold::format_bytes(img.after.allocated), change,
                       mold::format_bytes(img.after.reserved),
                       mold::format_bytes(img.after.host_rss));
  }
  out << "\n";
}

void print_leak_report(std::ostream& out, const mold::LeakReport& r) {
  out << fmt::format("warm-up:    {} image{} excluded (its change-point)\n",
                     r.warmup, r.warmup == 1 ? "" : "s");
  print_series(out, "allocated", r.allocated);
  print_series(out, "reserved", r.reserved);
  print_series(out, "host RSS", r.host);
  out << fmt::format("verdict:    {}\n", r.summary);
  for (const auto& a : r.attributions)
    out << fmt::format(
        "kept by:    {} ({}{}), {} per image over {} images: {}\n",
        a.phase.empty() ? std::string("between phases") : a.phase,
        a.component.empty() ? std::string("no component") : a.component,
        a.exact ? ", exact" : ", inferred",
        mold::format_bytes(mold::Bytes(std::llround(a.bytes_per_image))),
        a.images, a.detail);
  for (const auto& h : r.parked_holding)
    out << fmt::format(
        "parked but holding: {} still holds {} of its {} on the device ({})\n",
        h.component, mold::format_bytes(h.held), mold::format_bytes(h.bytes),
        h.exact
            ? "its load's allocations are still live"
            : "its last park gave back only " +
                  mold::format_bytes(h.bytes > h.held ? h.bytes - h.held : 0));
}

void print_parity_report(std::ostream& out, const mold::ParityReport& r) {
  out << fmt::format("parity:     {}\n", r.summary);
  for (const auto& row : r.phases) {
    const std::string name =
        row.occurrence == 0
            ? row.phase
            : fmt::format("{} #{}", row.phase, row.occurrence + 1);
    out << fmt::format(
        "  {:<16} image 1 {}, worst image {} {} (allowed {}){}\n", name,
        mold::format_bytes(row.first), row.worst_image + 1,
        mold::format_bytes(row.worst), mold::format_bytes(row.allowed),
        !row.ok ? fmt::format("  BROKEN: its own working memory {} (image 1 "
                              "{})",
                              mold::format_bytes(row.worst_working),
                              mold::format_bytes(row.first_working))
        : row.carried_in
            ? fmt::format("  CARRIED: {} more found allocated, kept by {}",
                          mold::format_bytes(row.carried),
                          row.carried_by_image < 0
                              ? std::string("an earlier image")
                              : fmt::format("{} of {}{}",
                                            row.carried_by.empty()
                                                ? std::string("between phases")
                                                : row.carried_by,
                                            mold::carried_images(row),
                                            row.carried_exact ? " (exact)"
                                                              : " (inferred)"))
            : std::string());
  }
}

int report_profile(const mold::MemoryProfile& profile,
                   const mold::LeakOptions* leak,
                   const mold::ParityOptions* parity,
                   const ProfileOutputs& outputs) {
  mold::LeakReport leak_report;
  if (leak) leak_report = mold::analyze_leaks(profile, *leak);
  mold::ParityReport parity_report;
  if (parity) parity_report = mold::check_parity(profile, *parity);
  const mold::LeakReport* l = leak ? &leak_report : nullptr;
  const mold::ParityReport* pr = parity ? &parity_report : nullptr;
  const std::string json = mold::profile_json(profile, l, pr);
  if (!outputs.json_file.empty())
    mold::write_file_atomically(
        outputs.json_file, "--report",
        [&](std::ostream& out) { out << json << "\n"; });
  if (!outputs.html_file.empty()) {
    const std::string html = mold::profile_html(profile, l, pr);
    mold::write_file_atomically(outputs.html_file, "--html",
                                [&](std::ostream& out) { out << html; });
  }
  if (outputs.json) {
    std::cout << json << "\n";
  } else {
    print_image_table(std::cout, profile);
    if (l) print_leak_report(std::cout, leak_report);
    if (pr) print_parity_report(std::cout, parity_report);
  }
  if (l && leak_report.verdict == mold::LeakVerdict::too_few)
    return mold::tools::kFailure;
  if (l && leak_report.verdict == mold::LeakVerdict::leak)
    return mold::tools::kLeak;
  if (pr && !parity_report.ok) return mold::tools::kParityBroken;
  if (l && leak_report.verdict == mold::LeakVerdict::undecided)
    return mold::tools::kUndecided;
  // Memory carried in fails parity's own question, not leak's (a bounded
  // cache carries memory by design); leak reports it.
  if (!l && pr && parity_report.carried) return mold::tools::kCarried;
  return mold::tools::kOk;
}

void add_analysis_options(boost::program_options::options_description& options,
                          AnalysisFlags& flags, mold::LeakOptions* leak) {
  namespace po = boost::program_options;
  if (leak) {
    options.add_options()(
        "threshold", po::value(&flags.threshold),
        "bytes per image that count as growth: of device memory (default 4 "
        "KiB); for a black box (--pid) of both host and device memory "
        "(default 256 KiB)");
    options.add_options()(
        "host-threshold", po::value(&flags.host_threshold),
        "host RSS bytes per image that count as growth (default 1 MiB; for a "
        "black box, --threshold's)");
    mold::tools::add_ranged_int(
        options, "max-warmup", &leak->max_warmup, 0, 100000,
        "images warm-up (found by a change-point) may exclude at most "
        "(default: half the images)");
  }
  options.add_options()(
      "tolerance",
      po::value(&flags.tolerance_percent)
          ->default_value(flags.tolerance_percent),
      "parity: percent of image 1's peak an image may exceed it by")(
      "slack", po::value(&flags.slack)->default_value(flags.slack),
      "parity: bytes an image may exceed image 1's peak by, besides");
}

void read_analysis_options(const AnalysisFlags& flags, mold::LeakOptions* leak,
                           mold::ParityOptions& parity, bool black_box) {
  auto bytes = [](const char* flag, const std::string& text) {
    const auto value = mold::try_parse_bytes(text);
    if (!value)
      throw mold::tools::UsageError(fmt::format(
          "{} '{}' is not a byte count: write e.g. \"64 KiB\" or \"1 MiB\"",
          flag, text));
    return *value;
  };
  if (leak) {
    const std::string device = !flags.threshold.empty() ? flags.threshold
                               : black_box ? std::string(kBlackBoxThreshold)
                                           : std::string("4 KiB");
    leak->threshold = bytes("--threshold", device);
    const std::string host = !flags.host_threshold.empty()
                                 ? flags.host_threshold
                             : black_box ? device
                                         : std::string("1 MiB");
    leak->host_threshold = bytes("--host-threshold", host);
  }
  parity.absolute = bytes("--slack", flags.slack);
  if (!(flags.tolerance_percent >= 0 && flags.tolerance_percent <= 100))
    throw mold::tools::UsageError(
        fmt::format("--tolerance {}: give a percent from 0 to 100",
                    flags.tolerance_percent));
  parity.relative = flags.tolerance_percent / 100;
}

}  // namespace molddiag
