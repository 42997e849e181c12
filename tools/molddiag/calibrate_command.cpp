// molddiag calibrate: measure a VAE operation's working memory on the cpu
// backend at several sizes and write the constants into a calibration file.

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mold/device/cpu_backend.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

namespace {

struct Point {
  int size;
  mold::Bytes peak;
  double implied;  // peak / (pixels x element size)
  double seconds;
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
      throw UsageError(
          fmt::format("--sizes '{}': give positive multiples of 8 separated by "
                      "commas, e.g. 128,256,384",
                      text));
    }
  }
  if (sizes.empty()) throw UsageError("--sizes is empty");
  return sizes;
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
  const std::filesystem::path temporary = file.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
    if (!out)
      throw mold::Error(fmt::format("{}: cannot write", temporary.string()));
  }
  std::filesystem::rename(temporary, file);
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string family, op, sizes_text = "128,256,384", config = "default", write;
  double headroom = 1.05;
  bool json = false;
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
      "Exit: 0 done; 1 failed; 2 usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")("family", po::value(&family),
                                               "qwen_image or zimage")(
      "op", po::value(&op), "vae_decode or vae_encode")(
      "sizes", po::value(&sizes_text)->default_value("128,256,384"),
      "square image edges in pixels")(
      "arch", po::value(&config)->default_value("default"),
      "default or tiny architecture")("headroom",
                                      po::value(&headroom)->default_value(1.05),
                                      "factor over the measured points")(
      "write", po::value(&write),
      "calibration file whose [op.cpu] table to replace")(
      "json", po::bool_switch(&json), "print JSON");
  add_common_options(options, common);
  const auto vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return kOk;
  }
  if (family.empty()) throw UsageError("--family is required");
  if (op != mold::ops::kVaeDecode && op != mold::ops::kVaeEncode)
    throw UsageError("--op takes vae_decode or vae_encode");
  if (!(headroom >= 1.0 && headroom <= 2.0))
    throw UsageError(
        fmt::format("--headroom {} must be between 1.0 and 2.0", headroom));
  const std::vector<int> sizes = parse_sizes(sizes_text);
  if (!write.empty() && config != "default")
    throw UsageError(
        "--write records constants of the published architecture: drop "
        "--arch " +
        config);
  if (!write.empty() && !std::filesystem::is_regular_file(write))
    throw UsageError(
        fmt::format("--write {}: no such calibration file", write));

  const DiagContext context = make_context(common);
  auto cpu = mold::CpuBackend::instance();
  const auto vae = make_family_vae(*context.registry, family, config, 0);
  at::Generator generator = at::detail::createCPUGenerator(1);
  std::vector<Point> points;
  for (const int size : sizes) {
    const bool decode = op == mold::ops::kVaeDecode;
    const at::Tensor input =
        decode ? at::randn({1, vae->latent_channels(), size / 8, size / 8},
                           generator, at::kFloat)
               : at::rand({1, 3, size, size}, generator, at::kFloat) * 2 - 1;
    const mold::Bytes live = cpu->stats().allocated;
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
    points.push_back(
        {size, peak, double(peak) / (double(size) * size * 4), seconds});
    if (!json)
      std::cout << fmt::format(
          "  {}x{}: peak {} ({} bytes), {:.1f} bytes/px/elem-byte, {:.1f} s\n",
          size, size, mold::format_bytes(peak), peak, points.back().implied,
          seconds);
  }
  double max_k = 0;
  for (const auto& p : points) max_k = std::max(max_k, p.implied);
  const double flat = std::ceil(max_k * headroom);

  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string command = fmt::format(
      "molddiag calibrate --family {} --op {} --sizes {} --headroom {:g}",
      family, op, sizes_text, headroom);
  std::string block = fmt::format("[{}.cpu]\n", op);
  block += fmt::format("# measured by: {} ({}, {})\n", command,
                       cpu->device_name(), date);
  block += fmt::format("bytes_per_pixel = {:g}\npoints = [", flat);
  for (std::size_t i = 0; i < points.size(); ++i)
    block += fmt::format("{}[{}, {:.1f}]", i ? ", " : "",
                         points[i].size * points[i].size, points[i].implied);
  block += fmt::format("]\nheadroom = {:g}\ncalibrated = true\n", headroom);
  block += fmt::format(
      "source = \"{} on {}, float32, peak bytes of the cpu backend's tracking "
      "allocator ({})\"\n",
      command, cpu->device_name(), date);
  if (!write.empty()) write_table(write, op + ".cpu", block);

  if (json) {
    nlohmann::json out = {{"family", family},
                          {"op", op},
                          {"bytes_per_pixel", flat},
                          {"headroom", headroom},
                          {"command", command}};
    out["points"] = nlohmann::json::array();
    for (const auto& p : points)
      out["points"].push_back({{"size", p.size},
                               {"peak_bytes", p.peak},
                               {"bytes_per_pixel", p.implied},
                               {"seconds", p.seconds}});
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "\n" << block;
    if (!write.empty()) std::cout << fmt::format("\nwritten to {}\n", write);
  }
  return kOk;
}

}  // namespace molddiag
