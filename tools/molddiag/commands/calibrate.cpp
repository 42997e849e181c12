// molddiag calibrate: measure a VAE operation's working memory on the cpu
// backend at several sizes and write the constants into a calibration file.

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/base/memory_stats.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "family_vae.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct CalibrateRequest {
  tools::HostOptions host;
  std::string family, op, sizes_text = "128,256,384", arch = "default";
  std::vector<int> sizes;  ///< square image edges, parsed from sizes_text
  double headroom = 1.05;
  std::string write;  ///< the calibration file to update; empty: none
  bool json = false, verbose = false;
};

/// One measured size.
struct Point {
  int size;
  mold::Bytes peak;
  double implied;  // peak / (pixels x element size)
  double seconds;
  /// The process's peak resident set during the run above its resident set
  /// before it (0 where /proc cannot say): what the tracking allocator sees
  /// plus what it does not (oneDNN's scratch, allocator slack, code pages).
  mold::Bytes rss_peak = 0;
};

struct CalibrateResult {
  std::vector<Point> points;
  double bytes_per_pixel = 0;  ///< the largest point's, times the headroom
  std::string command;         ///< the command line recorded in the block
  std::string block;           ///< the [op.cpu] TOML table
};

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> sizes;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v <= 0 || v % 8)
        throw std::invalid_argument("size");
      sizes.push_back(v);
    } catch (const std::exception&) {
      throw tools::UsageError(
          fmt::format("--sizes '{}': give positive multiples of 8 separated by "
                      "commas, e.g. 128,256,384",
                      text));
    }
  }
  if (sizes.empty()) throw tools::UsageError("--sizes is empty");
  return sizes;
}

tools::Parsed<CalibrateRequest> parse(const std::vector<std::string>& args) {
  tools::Parsed<CalibrateRequest> parsed;
  CalibrateRequest& r = parsed.request;
  po::options_description options(
      "molddiag calibrate --family F --op vae_decode|vae_encode [--sizes "
      "128,256,384]\n"
      "                   [--write calibration.toml] [--json]\n\n"
      "Runs the family's VAE (published architecture, seeded weights, float32) "
      "on the cpu\n"
      "backend at each size, measures the peak bytes above what was live "
      "before (the\n"
      "tracking allocator's count), and prints bytes per pixel per element "
      "byte. With\n"
      "--write, replaces the [op.cpu] table of that calibration file (other "
      "tables and\n"
      "comments are kept) with the measured points, headroom and this "
      "command.\n"
      "Exit: 0 done; 1 failed (out of memory: the label and hints); 2 "
      "usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")("family", po::value(&r.family),
                                               "qwen_image or zimage")(
      "op", po::value(&r.op), "vae_decode or vae_encode")(
      "sizes", po::value(&r.sizes_text)->default_value("128,256,384"),
      "square image edges in pixels")(
      "arch", po::value(&r.arch)->default_value("default"),
      "default or tiny architecture")(
      "headroom", po::value(&r.headroom)->default_value(1.05),
      "factor over the measured points")(
      "write", po::value(&r.write),
      "calibration file whose [op.cpu] table to replace")(
      "verbose", po::bool_switch(&r.verbose),
      "on a libtorch error, print its full text, C++ backtrace included")(
      "json", po::bool_switch(&r.json), "print JSON");
  tools::add_host_options(options, r.host);
  const auto vm = tools::parse_args(args, options);
  if (vm.count("help")) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  if (r.family.empty()) throw tools::UsageError("--family is required");
  if (r.op != mold::ops::kVaeDecode && r.op != mold::ops::kVaeEncode)
    throw tools::UsageError("--op takes vae_decode or vae_encode");
  if (!(r.headroom >= 1.0 && r.headroom <= 2.0))
    throw tools::UsageError(
        fmt::format("--headroom {} must be between 1.0 and 2.0", r.headroom));
  r.sizes = parse_sizes(r.sizes_text);
  if (!r.write.empty() && r.arch != "default")
    throw tools::UsageError(
        "--write records constants of the published architecture: drop "
        "--arch " +
        r.arch);
  if (!r.write.empty()) {
    const std::string type = mold::describe_file_type(r.write);
    if (type != "a regular file")
      throw tools::UsageError(
          type == "missing"
              ? fmt::format("--write {}: no such calibration file", r.write)
              : fmt::format("--write {} is {}, not a calibration file", r.write,
                            type));
  }
  return parsed;
}

/// Replaces the [table] block of a TOML file (up to the next table header) with
/// `block`, or appends it; the rest of the file, comments included, is kept.
/// Written atomically.
void write_table(const std::filesystem::path& file, const std::string& table,
                 const std::string& block) {
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    if (!in)
      throw mold::Error(
          fmt::format("{}: cannot read the calibration file", file.string()));
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  const std::string header = "[" + table + "]";
  std::size_t begin = lines.size(), end = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == header) {
      begin = i;
      end = i + 1;
      while (end < lines.size() && (lines[end].empty() || lines[end][0] != '['))
        ++end;
      // Leave the comment lines that introduce the next table where they are.
      while (end > begin + 1 &&
             (lines[end - 1].empty() || lines[end - 1][0] == '#'))
        --end;
      break;
    }
  }
  std::vector<std::string> replacement;
  std::stringstream ss(block);
  std::string line;
  while (std::getline(ss, line)) replacement.push_back(line);
  if (begin == lines.size()) {
    lines.push_back("");
    lines.insert(lines.end(), replacement.begin(), replacement.end());
  } else {
    lines.erase(lines.begin() + long(begin), lines.begin() + long(end));
    lines.insert(lines.begin() + long(begin), replacement.begin(),
                 replacement.end());
  }
  mold::write_file_atomically(file, "--write", [&](std::ostream& out) {
    for (const auto& l : lines) out << l << "\n";
  });
}

/// Measures each size (calling `on_point` after each, for progress), builds
/// the calibration table and, with --write, writes it. Sets `failure`'s
/// workload to the size being measured.
CalibrateResult run(const tools::Host& host, const CalibrateRequest& request,
                    const std::function<void(const Point&)>& on_point,
                    FailureContext& failure) {
  auto cpu = mold::CpuBackend::instance();
  const auto vae =
      make_family_vae(*host.registry, request.family, request.arch, 0);
  at::Generator generator = at::detail::createCPUGenerator(1);
  CalibrateResult result;
  std::vector<Point>& points = result.points;
  for (const int size : request.sizes) {
    const bool decode = request.op == mold::ops::kVaeDecode;
    if (request.arch == "default") {  // the estimators describe this one only
      mold::Workload w;
      w.family = request.family;
      w.op = request.op;
      w.backend = "cpu";
      w.dtype = "float32";
      w.height = w.width = size;
      failure.workload = w;
    }
    const at::Tensor input =
        decode ? at::randn({1, vae->latent_channels(), size / 8, size / 8},
                           generator, at::kFloat)
               : at::rand({1, 3, size, size}, generator, at::kFloat) * 2 - 1;
    const mold::Bytes live = cpu->stats().allocated;
    const mold::Bytes rss_before = mold::read_host_rss();
    const bool rss_peak_known = mold::reset_host_peak_rss();
    cpu->reset_peak();
    const auto start = std::chrono::steady_clock::now();
    {
      const at::Tensor out =
          decode ? vae->decode(input, {}) : vae->encode(input, {});
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const mold::Bytes peak = cpu->stats().peak_allocated - live;
    const mold::Bytes rss_peak = mold::read_host_peak_rss();
    points.push_back(
        {size, peak, double(peak) / (double(size) * size * 4), seconds,
         rss_peak_known && rss_peak > rss_before ? rss_peak - rss_before : 0});
    if (on_point) on_point(points.back());
  }
  double max_k = 0;
  for (const auto& p : points) max_k = std::max(max_k, p.implied);
  result.bytes_per_pixel = std::ceil(max_k * request.headroom);

  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  result.command = fmt::format(
      "molddiag calibrate --family {} --op {} --sizes {} --headroom {:g}",
      request.family, request.op, request.sizes_text, request.headroom);
  std::string& block = result.block;
  block = fmt::format("[{}.cpu]\n", request.op);
  block += fmt::format("# measured by: {} ({}, {})\n", result.command,
                       cpu->device_name(), date);
  block +=
      fmt::format("bytes_per_pixel = {:g}\npoints = [", result.bytes_per_pixel);
  for (std::size_t i = 0; i < points.size(); ++i)
    block += fmt::format("{}[{}, {:.1f}]", i ? ", " : "",
                         points[i].size * points[i].size, points[i].implied);
  block +=
      fmt::format("]\nheadroom = {:g}\ncalibrated = true\n", request.headroom);
  block += fmt::format(
      "source = \"{} on {}, float32, peak bytes of the cpu backend's tracking "
      "allocator ({})\"\n",
      result.command, cpu->device_name(), date);
  if (!request.write.empty())
    write_table(request.write, request.op + ".cpu", block);
  return result;
}

void print_point(const Point& p) {
  const std::string rss =
      p.rss_peak > p.peak
          ? fmt::format(
                "process RSS peak +{}, {} of it not seen by the "
                "tracking allocator",
                mold::format_bytes(p.rss_peak),
                mold::format_bytes(p.rss_peak - p.peak))
          : fmt::format(
                "process RSS peak +{} (memory reused from earlier "
                "runs)",
                mold::format_bytes(p.rss_peak));
  std::cout << fmt::format(
      "  {}x{}: peak {} ({} bytes), {:.1f} bytes/px/elem-byte, {:.1f} s; {}\n",
      p.size, p.size, mold::format_bytes(p.peak), p.peak, p.implied, p.seconds,
      rss);
}

nlohmann::json to_json(const CalibrateRequest& request,
                       const CalibrateResult& result) {
  nlohmann::json out = {{"family", request.family},
                        {"op", request.op},
                        {"bytes_per_pixel", result.bytes_per_pixel},
                        {"headroom", request.headroom},
                        {"command", result.command}};
  out["points"] = nlohmann::json::array();
  for (const auto& p : result.points)
    out["points"].push_back({{"size", p.size},
                             {"peak_bytes", p.peak},
                             {"bytes_per_pixel", p.implied},
                             {"seconds", p.seconds},
                             {"rss_peak_bytes", p.rss_peak}});
  return out;
}

/// The text output after the points (printed as they are measured).
void print(const CalibrateRequest& request, const CalibrateResult& result) {
  if (request.json) {
    tools::print_json(std::cout, to_json(request, result));
    return;
  }
  std::cout << "\n" << result.block;
  if (!request.write.empty())
    std::cout << fmt::format("\nwritten to {}\n", request.write);
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args) {
  const auto parsed = parse(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const CalibrateRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  std::function<void(const Point&)> progress;
  if (!request.json) progress = print_point;
  FailureContext failure;
  failure.registry = host.registry.get();
  failure.verbose = request.verbose;
  failure.device = mold::CpuBackend::instance()->device_name();
  failure.extra_hints.push_back(
      "smaller --sizes: each size is measured as one whole run");
  CalibrateResult result;
  try {
    result = run(host, request, progress, failure);
  } catch (...) {
    rethrow_readable(failure);
  }
  print(request, result);
  return tools::kOk;
}

}  // namespace molddiag
