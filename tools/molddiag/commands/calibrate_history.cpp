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
  std::vector<std::vector<mold::MeasuredPhase>> shapes;
  for (const auto& phase : history.phases()) {
    const auto& w = phase.workload;
    if (phase.lower_bound || w.family != request.family || w.op != request.op ||
        w.arch != request.arch ||
        (!request.model.empty() && w.model != request.model))
      continue;
    ++out.runs;
    auto same = std::find_if(shapes.begin(), shapes.end(), [&](const auto& s) {
      return mold::same_shape(s.front().workload, w);
    });
    if (same == shapes.end())
      shapes.push_back({phase});
    else
      same->push_back(phase);
  }
  if (shapes.empty())
    throw mold::Error(fmt::format(
        "--from-history {}: no run of {} {} at --arch {}{} on {} (molddiag "
        "history lists what it holds)",
        file.string(), request.family, request.op, request.arch,
        request.model.empty() ? "" : " of " + request.model, out.device));
  for (auto& runs : shapes) {
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.peak < b.peak; });
    const mold::MeasuredPhase& median = runs[(runs.size() - 1) / 2];
    PhasePoint p;
    p.size = median.workload.width;
    p.tokens = median.workload.tokens;
    p.images = int(median.workload.images.size());
    p.dtype = median.workload.dtype;
    p.weights =
        median.workload.model.empty() ? "history" : median.workload.model;
    p.peak = median.peak;
    p.threads = median.workload.threads;
    p.thread_bytes = std::min(median.unfitted, median.peak);
    p.bases = median.bases;
    if (p.bases.empty())
      throw mold::Error(fmt::format(
          "--from-history {}: the runs of {} {} name no constants (their "
          "estimate had none to fit)",
          file.string(), request.family, request.op));
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
  const std::string date = calibration_date();
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
  std::string& block = out.block;
  block = fmt::format("[{}]\n", table);
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
  if (!request.write.empty())
    mold::replace_toml_table(request.write, table, block, "--write");
  return out;
}

}  // namespace molddiag
