// molddiag history: what each device's measured history holds (the phases
// the learned estimates come from), and pruning it.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mold/base/error.hpp>
#include <mold/history/learned_estimate.hpp>
#include <mold/history/measured_history.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;
namespace fs = std::filesystem;

namespace molddiag {

namespace {

struct HistoryRequest {
  tools::HostOptions host;
  std::string dir;     ///< "": MeasuredHistory::default_directory()
  std::string device;  ///< "": every device
  bool json = false;
  bool prune = false;
  int older_than_days = -1;  ///< prune: phases older than this (-1: any age)
  std::string model, op, by;
};

struct Group {
  std::size_t runs = 0, bounds = 0;
  std::vector<mold::Workload> shapes;
  mold::Bytes largest = 0;
  std::int64_t last = 0;
};

nlohmann::json summarize(const mold::MeasuredHistory& history,
                         std::ostream* text) {
  std::map<std::string, Group> groups;
  for (const auto& p : history.phases()) {
    const auto& w = p.workload;
    Group& g = groups[fmt::format(
        "{} {} {}{}{}", w.family, w.model.empty() ? "-" : w.model, w.op,
        w.arch == "default" ? "" : " (" + w.arch + ")",
        w.quantized ? " quantized" : "")];
    if (p.lower_bound)
      ++g.bounds;
    else
      ++g.runs;
    if (std::none_of(
            g.shapes.begin(), g.shapes.end(),
            [&](const mold::Workload& s) { return mold::same_shape(s, w); }))
      g.shapes.push_back(w);
    g.largest = std::max(g.largest, p.peak);
    g.last = std::max(g.last, p.time);
  }
  nlohmann::json out = {
      {"backend", history.backend()},       {"device", history.device()},
      {"file", history.file().string()},    {"phases", history.phases().size()},
      {"skipped_lines", history.skipped()}, {"problem", history.problem()},
      {"ops", nlohmann::json::array()}};
  if (text)
    *text << fmt::format("{} on {}: {} phases, {} lines skipped ({})\n",
                         history.backend(), history.device(),
                         history.phases().size(), history.skipped(),
                         history.file().string());
  if (text && !history.problem().empty())
    *text << "  problem: " << history.problem() << "\n";
  for (const auto& [key, g] : groups) {
    out["ops"].push_back({{"op", key},
                          {"runs", g.runs},
                          {"failed_lower_bounds", g.bounds},
                          {"shapes", g.shapes.size()},
                          {"largest_peak_bytes", g.largest},
                          {"last_time", g.last}});
    if (text)
      *text << fmt::format(
          "  {}: {} run{} of {} shape{}{}, largest peak {}\n", key, g.runs,
          g.runs == 1 ? "" : "s", g.shapes.size(),
          g.shapes.size() == 1 ? "" : "s",
          g.bounds ? fmt::format(", {} failed (lower bounds)", g.bounds) : "",
          mold::format_bytes(g.largest));
  }
  return out;
}

}  // namespace

int history_command(const std::vector<std::string>& args) {
  tools::Parsed<HistoryRequest> parsed;
  HistoryRequest& r = parsed.request;
  po::options_description options(
      "molddiag history [--device NAME] [--prune [filters]] [--json]\n\n"
      "Lists what each device's measured history holds: per op, the runs, "
      "the\n"
      "distinct shapes and the largest peak (the learned estimates come from "
      "these).\n"
      "With --prune, drops the phases the filters name (all of them with "
      "none).\n"
      "Exit: 0 done; 1 a history could not be rewritten; 2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "dir", po::value(&r.dir),
      "the history folder (default: $XDG_STATE_HOME/mold/history)")(
      "device", po::value(&r.device), "only this device's history (as listed)")(
      "prune", po::bool_switch(&r.prune), "drop the phases the filters name")(
      "model", po::value(&r.model), "prune: only this model's phases")(
      "op", po::value(&r.op), "prune: only this op's phases")(
      "by", po::value(&r.by),
      "prune: only what this recorded (\"mold run\", \"mold serve\", ...)");
  tools::add_ranged_int(options, "older-than", &r.older_than_days, 0, 36500,
                        "prune: only phases older than this many days",
                        std::nullopt);
  options.add_options()("json", po::bool_switch(&r.json), "print JSON");
  tools::add_host_options(options, r.host);
  if (tools::wants_help(args)) {
    std::cout << tools::help_text(options);
    return tools::kOk;
  }
  tools::parse_args(args, options);
  if (!r.prune && (!r.model.empty() || !r.op.empty() || !r.by.empty() ||
                   r.older_than_days >= 0))
    throw tools::UsageError(
        "--model, --op, --by and --older-than choose what --prune drops: add "
        "--prune");
  const tools::Host host = tools::open_host(r.host);
  const fs::path dir = r.dir.empty()
                           ? mold::MeasuredHistory::default_directory()
                           : fs::path(r.dir);
  if (dir.empty())
    throw mold::Error(
        "no history folder: neither XDG_STATE_HOME nor HOME is set; give "
        "--dir");
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".jsonl" && entry.is_regular_file(ec))
        files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  nlohmann::json out = {{"dir", dir.string()},
                        {"devices", nlohmann::json::array()}};
  std::ostream* text = r.json ? nullptr : &std::cout;
  if (text && files.empty())
    *text << fmt::format("no measured history in {}\n", dir.string());
  bool found = false;
  for (const auto& file : files) {
    const auto owner = mold::MeasuredHistory::owner(file);
    if (!owner) continue;
    if (!r.device.empty() && owner->second != r.device) continue;
    found = true;
    mold::MeasuredHistory history(file, owner->first, owner->second);
    if (r.prune) {
      const auto dropped = history.prune([&](const mold::MeasuredPhase& p) {
        const bool named =
            (r.model.empty() || p.workload.model == r.model) &&
            (r.op.empty() || p.workload.op == r.op) &&
            (r.by.empty() || p.by == r.by) &&
            (r.older_than_days < 0 ||
             p.time < now - std::int64_t(r.older_than_days) * 86400);
        return !named;
      });
      if (text)
        *text << fmt::format("{} on {}: dropped {} phase{}\n", owner->first,
                             owner->second, dropped, dropped == 1 ? "" : "s");
    }
    out["devices"].push_back(summarize(history, text));
  }
  if (!r.device.empty() && !found)
    throw mold::Error(fmt::format(
        "no measured history of a device named '{}' in {}: run molddiag "
        "history to list the devices",
        r.device, dir.string()));
  if (r.json) tools::print_json(std::cout, out);
  return tools::kOk;
}

}  // namespace molddiag
