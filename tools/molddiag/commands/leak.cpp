// molddiag leak: N images of a model through the runtime, and whether memory
// grows from image to image, with the phase and component that keep it.
// molddiag parity: whether image k needs more than image 1.

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/net/server_address.hpp>
#include <mold/plan/generate_schema.hpp>
#include <mold/profile/html_report.hpp>
#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/parity.hpp>
#include <mold/profile/profile_report.hpp>
#include <utility>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/options.hpp"
#include "process_driver.hpp"
#include "profile_driver.hpp"
#include "profile_text.hpp"
#include "remote_driver.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct ProfileRequest {
  ProfileRun run;
  mold::LeakOptions leak;
  mold::ParityOptions parity;
  AnalysisFlags analysis;
  bool json = false;
  std::string json_file;  ///< --report FILE: the JSON report, written there
  std::string html_file;  ///< --html FILE: the HTML report, written there
  ProcessRun process;     ///< the black-box driver (--pid)
  std::string remote;     ///< --remote HOST: the remote driver
  int pid = 0;
  double settle_seconds = 0.5;
};

/// `leak` takes the leak rules and the parity tolerance; `parity` the
/// tolerance only.
tools::Parsed<ProfileRequest> parse_leak_options(
    const std::vector<std::string>& args, bool leak) {
  tools::Parsed<ProfileRequest> parsed;
  ProfileRequest& r = parsed.request;
  const std::string usage =
      leak ? "molddiag leak MODEL [--tiny] [--images 12] [options]\n"
             "       molddiag leak --pid PID --each COMMAND [--images 12] "
             "[options]\n\n"
             "Makes --images images of MODEL one after another (seed + i "
             "each) and says\n"
             "whether memory grows from image to image (docs/profiler.md): "
             "warm-up ends at a\n"
             "change-point; a leak is allocated memory whose slope's 95% "
             "interval (widened\n"
             "for autocorrelation) is above max(--threshold, 0.1% of the "
             "peak) and whose rise\n"
             "exceeds 6 deviations of its own noise; memory that grew and "
             "then stayed flat\n"
             "longer than any pause of its growth is a bounded cache; a run "
             "too short to tell\n"
             "says undecided, with the images it needs. Reserved growth "
             "alone is the\n"
             "allocator caching; host RSS growth with the device flat is a "
             "host leak. Names\n"
             "the phase and component that keep the growth (exactly where "
             "the backend\n"
             "attributes allocations: cpu), a parked component that still "
             "holds memory, and\n"
             "checks parity (as molddiag parity).\n"
             "Black box: molddiag leak --pid PID --each COMMAND runs COMMAND "
             "--images times\n"
             "and samples process PID after each (its RSS; its GPU memory "
             "where NVML is\n"
             "present): profile any generation server from the outside.\n"
             "Exit: 0 clean or bounded (memory carried in is reported); 3 "
             "leak; 4 parity\n"
             "broken; 5 undecided; 1 failed; 2 usage.\n\n"
             "options"
           : "molddiag parity MODEL [--tiny] [--images 3] [options]\n\n"
             "Makes --images images of MODEL one after another and checks "
             "that no phase of\n"
             "image k needs more than the same phase of image 1 by more "
             "than --tolerance\n"
             "and --slack: \"batch 2 should either succeed or fail on batch "
             "1 too\". A phase\n"
             "whose own working memory grew breaks parity; one that found "
             "more allocated\n"
             "beyond the resident weights (memory carried in from earlier "
             "images) is named\n"
             "with the bytes and the phase that kept them.\n"
             "Exit: 0 parity holds; 4 broken; 6 memory carried in; 1 failed; "
             "2 usage.\n\n"
             "options";
  po::options_description options(usage);
  options.add_options()("help,h", "this help");
  add_profile_run_options(options, r.run, leak ? 12 : 3, leak ? 4 : 2);
  options.add_options()(
      "remote", po::value(&r.remote),
      "make the images on this mold server (host, host:port or "
      "http://host:port) and read its memory record after each (GET "
      "/api/memory); MOLD_API_KEY is sent");
  if (leak) {
    tools::add_ranged_int(options, "pid", &r.pid, 1, 1 << 30,
                          "black box: sample this process instead of running "
                          "a model (with --each)");
    options.add_options()(
        "each", po::value(&r.process.each),
        "black box: the command to run --images times (by /bin/sh -c), e.g. "
        "a curl to the server --pid is")(
        "settle", po::value(&r.settle_seconds)->default_value(0.5),
        "black box: seconds to wait after each command before sampling");
    tools::add_ranged_int(options, "timeout", &r.process.timeout_seconds, 1,
                          86400, "black box: seconds one command may take",
                          600);
  }
  add_analysis_options(options, r.analysis, leak ? &r.leak : nullptr);
  options.add_options()(
      "json", po::bool_switch(&r.json),
      "print the JSON report (docs/profiler.md) instead of text")(
      "report", po::value(&r.json_file),
      "also write the JSON report to this file")(
      "html", po::value(&r.html_file),
      "also write the HTML report (one self-contained file) to this file");
  po::positional_options_description positional;
  positional.add("model", 1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options, &positional);
  tools::refuse_tiny_with_model_dirs(r.run.tiny, r.run.model_dirs);
  {
    // The images' seeds, seed .. seed + images - 1, and the settings' ranges.
    mold::GenerateSettings all = r.run.generate;
    all.batch = r.run.images;
    try {
      mold::check_generate_settings(all);
    } catch (const mold::InvalidArgument& e) {
      throw tools::UsageError(e.what());
    }
  }
  if (r.pid && !r.remote.empty())
    throw tools::UsageError(
        "give --remote HOST or --pid PID, not both: --remote drives a mold "
        "server, --pid samples any process");
  if (r.pid) {
    if (!r.run.model_spec.empty())
      throw tools::UsageError(fmt::format(
          "give MODEL or --pid, not both: --pid {} samples a process you "
          "run, MODEL runs one here",
          r.pid));
    if (r.process.each.empty())
      throw tools::UsageError(
          "--pid needs --each COMMAND: the request to send before each "
          "sample");
    if (!(r.settle_seconds >= 0 && r.settle_seconds <= 3600))
      throw tools::UsageError(
          fmt::format("--settle {}: give 0 to 3600 seconds", r.settle_seconds));
    r.process.pid = pid_t(r.pid);
    r.process.images = r.run.images;
    r.process.settle_seconds = r.settle_seconds;
    r.process.quiet = r.run.quiet;
  } else if (r.run.model_spec.empty()) {
    throw tools::UsageError(leak ? "give MODEL (or --pid PID --each COMMAND)"
                                 : "give MODEL");
  } else if (!r.process.each.empty()) {
    throw tools::UsageError("--each goes with --pid PID");
  }
  read_analysis_options(r.analysis, leak ? &r.leak : nullptr, r.parity,
                        r.pid != 0);
  if (leak) {
    const int least = std::max(4, r.leak.max_warmup + 3);
    if (r.run.images < least)
      throw tools::UsageError(
          r.leak.max_warmup < 0
              ? fmt::format("--images {}: give at least 4 (a line through 3 "
                            "images after a change-point)",
                            r.run.images)
              : fmt::format("--images {}: with --max-warmup {} give at least "
                            "{} (3 images after the longest warm-up)",
                            r.run.images, r.leak.max_warmup, least));
  }
  for (const auto& [flag, file] :
       {std::pair<const char*, std::string>{"--report", r.json_file},
        std::pair<const char*, std::string>{"--html", r.html_file}}) {
    if (file.empty()) continue;
    const std::string type = mold::describe_file_type(file);
    if (type != "missing" && type != "a regular file")
      throw tools::UsageError(
          fmt::format("{} {} is {}: give a file to write", flag, file, type));
  }
  if (!r.json_file.empty() && r.json_file == r.html_file)
    throw tools::UsageError(fmt::format(
        "--report and --html both name {}: give two files", r.json_file));
  return parsed;
}

int run_command(const std::vector<std::string>& args, bool leak) {
  const auto parsed = parse_leak_options(args, leak);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const ProfileRequest& r = parsed.request;
  const bool black_box = r.pid != 0;
  mold::MemoryProfile profile;
  if (black_box) {
    profile = run_process_profile(r.process);
  } else if (!r.remote.empty()) {
    RemoteProfileRun remote;
    try {
      remote.server = mold::net::parse_server_address(r.remote, "--remote");
    } catch (const mold::InvalidArgument& e) {
      throw tools::UsageError(e.what());
    }
    if (const char* key = std::getenv("MOLD_API_KEY")) remote.api_key = key;
    remote.run = r.run;
    profile = run_remote_profile(remote);
  } else {
    profile = run_profile(r.run);
  }
  ProfileOutputs outputs;
  outputs.json = r.json;
  outputs.json_file = r.json_file;
  outputs.html_file = r.html_file;
  // A black box has no phases to compare.
  return report_profile(profile, leak ? &r.leak : nullptr,
                        black_box ? nullptr : &r.parity, outputs);
}

}  // namespace

int leak_command(const std::vector<std::string>& args) {
  return run_command(args, true);
}

int parity_command(const std::vector<std::string>& args) {
  return run_command(args, false);
}

}  // namespace molddiag
