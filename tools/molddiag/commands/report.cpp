// molddiag report: a saved JSON report (molddiag leak --report) analysed
// again, with other thresholds if asked, and rendered as text, JSON or HTML:
// profile on the machine that has the GPU, read the results anywhere.

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/profile/profile_report.hpp>
#include <sstream>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/options.hpp"
#include "profile_text.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct ReportRequest {
  tools::HostOptions host;  ///< accepted, unused: a report needs no plugin
  std::string input;
  mold::LeakOptions leak;
  mold::ParityOptions parity;
  AnalysisFlags analysis;
  ProfileOutputs outputs;
};

tools::Parsed<ReportRequest> parse_report_options(
    const std::vector<std::string>& args) {
  tools::Parsed<ReportRequest> parsed;
  ReportRequest& r = parsed.request;
  po::options_description options(
      "molddiag report REPORT.json [--html OUT.html] [--json] [options]\n\n"
      "Reads a JSON report that molddiag leak or parity wrote (--report),\n"
      "analyses it again with the rules and thresholds given here\n"
      "(docs/profiler.md) and prints it as text (or JSON), writing the HTML\n"
      "report with --html. Parity is checked where the report has phases (not\n"
      "for a black box). The host options are accepted for every command's\n"
      "sake; a report needs no plugin.\n"
      "Exit: 0 clean or bounded; 3 leak; 4 parity broken; 5 undecided; 1 not "
      "a report or\nfailed; 2 usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "input", po::value(&r.input)->required(), "the JSON report");
  add_analysis_options(options, r.analysis, &r.leak);
  options.add_options()("json", po::bool_switch(&r.outputs.json),
                        "print the JSON report instead of text")(
      "html", po::value(&r.outputs.html_file),
      "write the HTML report to this file");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("input", 1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options, &positional);
  // The thresholds' values are read once the report says whether it is a
  // black box's (report_command); a bad one is still a usage error now.
  {
    mold::LeakOptions leak;
    mold::ParityOptions parity;
    read_analysis_options(r.analysis, &leak, parity);
  }
  const std::string type = mold::describe_file_type(r.input);
  if (type != "a regular file")
    throw tools::UsageError(
        type == "missing"
            ? fmt::format("{}: no such report", r.input)
            : fmt::format("{} is {}, not a report", r.input, type));
  if (!r.outputs.html_file.empty()) {
    const std::string out = mold::describe_file_type(r.outputs.html_file);
    if (out != "missing" && out != "a regular file")
      throw tools::UsageError(fmt::format(
          "--html {} is {}: give a file to write", r.outputs.html_file, out));
    if (r.outputs.html_file == r.input)
      throw tools::UsageError(fmt::format(
          "--html {} is the report it reads: give another file", r.input));
  }
  return parsed;
}

/// The report's text; refuses what cannot be one (larger than 256 MiB: a
/// 1,000-image report is about 2 MB).
std::string read_report(const std::string& path) {
  constexpr std::uintmax_t kMaxReport = 256ull << 20;
  return mold::read_regular_file(path, kMaxReport, "the report");
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  const auto parsed = parse_report_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  ReportRequest r = parsed.request;
  mold::MemoryProfile profile;
  try {
    profile = mold::profile_from_json(read_report(r.input));
  } catch (const mold::ParseError& e) {
    throw mold::Error(fmt::format("{}: {}", r.input, e.what()));
  }
  read_analysis_options(r.analysis, &r.leak, r.parity,
                        profile.driver == "process");
  return report_profile(profile, &r.leak,
                        profile.phases.empty() ? nullptr : &r.parity,
                        r.outputs);
}

}  // namespace molddiag
