#include "calibrate_history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <mold/base/error.hpp>
#include <mold/config/toml_table_writer.hpp>
#include <mold/history/learned_estimate.hpp>
#include <mold/history/measured_history.hpp>

namespace molddiag {

std::string calibration_date() {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

namespace {

using Runs = std::vector<mold::MeasuredPhase>;

/// The history's runs of the request's family, op, arch (and model), grouped
/// by shape; `runs` counts them.
std::vector<Runs> runs_by_shape(const mold::MeasuredHistory& history,
                                const CalibrateRequest& request,
                                std::size_t& runs) {
  std::vector<Runs> shapes;
  for (const auto& phase : history.phases()) {
    const auto& w = phase.workload;
    if (phase.lower_bound || w.family != request.family || w.op != request.op ||
        w.arch != request.arch ||
        (!request.model.empty() && w.model != request.model))
      continue;
    ++runs;
    auto same = std::find_if(shapes.begin(), shapes.end(), [&](const auto& s) {
      return mold::same_shape(s.front().workload, w);
    });
    if (same == shapes.end())
      shapes.push_back({phase});
    else
      same->push_back(phase);
  }
  return shapes;
}

/// One shape's point: the run with the median peak.
PhasePoint median_point(Runs runs, const CalibrateRequest& request) {
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.peak < b.peak; });
  const mold::MeasuredPhase& median = runs[(runs.size() - 1) / 2];
  PhasePoint p;
  p.size = median.workload.width;
  p.tokens = median.workload.tokens;
  p.images = int(median.workload.images.size());
  p.dtype = median.workload.dtype;
  p.weights = median.workload.model.empty() ? "history" : median.workload.model;
  p.peak = median.peak;
  p.threads = median.workload.threads;
  p.thread_bytes = std::min(median.unfitted, median.peak);
  p.bases = median.bases;
  if (p.bases.empty())
    throw mold::Error(fmt::format(
        "--from-history {}: the runs of {} {} name no constants (their "
        "estimate had none to fit)",
        request.from_history, request.family, request.op));
  return p;
}

/// The TOML table learned from the history, its points as comments.
std::string history_table(const CalibrateRequest& request,
                          const HistoryCalibration& out,
                          const std::string& table) {
  const bool vae = request.op == mold::ops::kVaeDecode ||
                   request.op == mold::ops::kVaeEncode;
  const std::string date = calibration_date();
  std::string block = fmt::format("[{}]\n", table);
  block +=
      fmt::format("# learned by: {} ({}, {}): {} runs of {} shapes\n",
                  out.command, out.device, date, out.runs, out.points.size());
  block +=
      "# model, dtype, width, tokens: measured working memory -> the "
      "estimate with these constants (ratio)\n";
  for (const auto& p : out.points) {
    const double estimate =
        fitted_bytes(out.fit, p) * request.headroom + double(unfitted_bytes(p));
    block +=
        fmt::format("#   {} {} {} px wide, {} tokens{}: {} -> {} ({:.3f})\n",
                    p.weights, p.dtype, p.size, p.tokens,
                    p.images ? fmt::format(", {} images", p.images) : "",
                    p.peak, std::llround(estimate),
                    estimate / double(std::max<mold::Bytes>(p.peak, 1)));
  }
  for (const auto& [name, value] : out.fit.constants)
    block += fmt::format("{} = {:.6g}\n", name, value);
  if (!vae && !out.fit.staged)
    block += fmt::format("arch = \"{}\"\n", request.arch);
  block +=
      fmt::format("headroom = {:g}\ncalibrated = true\n", request.headroom);
  block += fmt::format(
      "source = \"{} on {}: each phase's working peak as mold measured it "
      "({} runs of {} shapes, {})\"\n",
      out.command, out.device, out.runs, out.points.size(), date);
  return block;
}

}  // namespace

HistoryCalibration calibrate_from_history(const CalibrateRequest& request) {
  const std::filesystem::path file = request.from_history;
  const auto owner = mold::MeasuredHistory::owner(file);
  if (!owner)
    throw mold::Error(fmt::format(
        "--from-history {}: no line of a measured history in it (give a file "
        "that molddiag history lists)",
        file.string()));
  HistoryCalibration out;
  out.backend = owner->first;
  out.device = owner->second;
  const mold::MeasuredHistory history(file, out.backend, out.device);
  // One point per distinct shape: the median of its runs.
  const std::vector<Runs> shapes = runs_by_shape(history, request, out.runs);
  if (shapes.empty())
    throw mold::Error(fmt::format(
        "--from-history {}: no run of {} {} at --arch {}{} on {} (molddiag "
        "history lists what it holds)",
        file.string(), request.family, request.op, request.arch,
        request.model.empty() ? "" : " of " + request.model, out.device));
  for (const auto& runs : shapes) {
    PhasePoint p = median_point(runs, request);
    if (!out.points.empty() &&
        p.bases.size() != out.points.front().bases.size())
      throw mold::Error(fmt::format(
          "--from-history {}: the runs of {} {} were estimated with different "
          "terms (an older mold?): prune the older ones (molddiag history "
          "--prune --older-than DAYS)",
          file.string(), request.family, request.op));
    out.points.push_back(std::move(p));
  }
  out.fit = fit_constants(out.points);
  out.command = fmt::format(
      "molddiag calibrate --family {} --op {} --arch {}{} --from-history {} "
      "--headroom {:g}",
      request.family, request.op, request.arch,
      request.model.empty() ? "" : " --model " + request.model,
      file.filename().string(), request.headroom);
  const bool vae = request.op == mold::ops::kVaeDecode ||
                   request.op == mold::ops::kVaeEncode;
  const std::string table =
      request.op + "." + out.backend +
      (vae && request.arch != "default" ? "." + request.arch : "");
  out.block = history_table(request, out, table);
  if (!request.write.empty())
    mold::replace_toml_table(request.write, table, out.block, "--write");
  return out;
}

}  // namespace molddiag
