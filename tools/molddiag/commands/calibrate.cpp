// molddiag calibrate: measure an operation's working memory on the cpu backend
// at several sizes and write the constants into a calibration file: a VAE's
// per pixel, a text encoder's or denoiser's per token and attention score
// (through the family's pipeline, calibrate_phase.hpp).

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/base/memory_stats.hpp>
#include <mold/base/text.hpp>
#include <mold/config/toml_table_writer.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate_history.hpp"
#include "calibrate_options.hpp"
#include "calibrate_phase.hpp"
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

/// What a point's peak is, for a table's source.
std::string peak_meaning(const std::string& backend) {
  return backend == "cpu"
             ? std::string("peak bytes of the cpu backend's tracking allocator")
             : "peak bytes reserved above the start, as the " + backend +
                   " backend's caching allocator reports them";
}

/// One measured size.
struct Point {
  std::string dtype;
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
  std::vector<Point> points;   ///< vae_*
  double bytes_per_pixel = 0;  ///< the largest point's, times the headroom
  double float32_bytes_per_pixel = 0;    ///< several dtypes: the float32 part
  double attention_fixed_bytes = 0;      ///< --attention-from
  double bytes_per_latent_score = 0;     ///< --attention-from
  std::vector<PhasePoint> phase_points;  ///< text_encode, denoise
  mold::ConstantFit fit;                 ///< text_encode, denoise
  std::string command;  ///< the command line recorded in the block
  std::string block;    ///< the [op.cpu] TOML table
};

/// The attention term over the latent's (size / 8)^2 tokens that covers
/// `points` (at least two sizes): bytes per score per element byte from the
/// smallest and largest, the fixed bytes raised until every point is
/// covered; the TOML lines, with each point's measured bytes against the
/// estimate before headroom.
std::string attention_term(const std::vector<Point>& points,
                           const CalibrateRequest& request,
                           CalibrateResult& result) {
  auto scores = [](const Point& p) {
    const double tokens = double(p.size / 8) * double(p.size / 8);
    return tokens * tokens * double(mold::dtype_size(p.dtype));
  };
  const auto [smallest, largest] = std::minmax_element(
      points.begin(), points.end(),
      [](const Point& a, const Point& b) { return a.size < b.size; });
  const Point& first = *smallest;
  const Point& last = *largest;
  double per_score = 0;
  if (scores(last) > scores(first))
    per_score = std::max(0.0, (double(last.peak) - double(first.peak)) /
                                  (scores(last) - scores(first)));
  double fixed = 0;
  for (const auto& p : points)
    fixed = std::max(fixed, double(p.peak) - per_score * scores(p));
  result.attention_fixed_bytes = std::ceil(fixed);
  result.bytes_per_latent_score = std::ceil(per_score * 1e4) / 1e4;
  std::string block = fmt::format(
      "# attention (--attention-from {}): size: measured bytes -> fixed + "
      "per score x (size/8)^4 x element (ratio)\n",
      request.attention_from);
  for (const auto& p : points) {
    const double fit = result.attention_fixed_bytes +
                       result.bytes_per_latent_score * scores(p);
    block += fmt::format("#   {}x{}: {} -> {:.0f} ({:.3f})\n", p.size, p.size,
                         p.peak, fit, fit / double(p.peak));
  }
  block += fmt::format(
      "attention_fixed_bytes = {:.0f}\nbytes_per_latent_score = "
      "{:g}\n",
      result.attention_fixed_bytes, result.bytes_per_latent_score);
  return block;
}

/// One VAE pass of `size` in `dtype_name` (the VAE already in that dtype on
/// the backend's device): its working peak, time and resident-set peak.
Point measure_point(mold::Backend& backend, mold::Vae& vae,
                    const CalibrateRequest& request,
                    const std::string& dtype_name, at::ScalarType dtype,
                    int size, at::Generator& generator) {
  const bool decode = request.op == mold::ops::kVaeDecode;
  const at::Tensor input =
      (decode ? at::randn({1, vae.latent_channels(), size / 8, size / 8},
                          generator, at::kFloat)
              : at::rand({1, 3, size, size}, generator, at::kFloat) * 2 - 1)
          .to(backend.torch_device(), dtype);
  backend.synchronize_and_check();
  backend.empty_cache();
  const mold::MemoryStats before = backend.stats();
  const mold::Bytes rss_before = mold::read_host_rss();
  const bool rss_peak_known = mold::reset_host_peak_rss();
  backend.reset_peak();
  const auto start = std::chrono::steady_clock::now();
  {
    const at::Tensor out =
        decode ? vae.decode(input, {}) : vae.encode(input, {});
    backend.synchronize_and_check();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // The allocated peak above the start (the cpu backend's tracking
  // allocator), or the reserved one where an allocator caches (cuda).
  const mold::Bytes peak = mold::working_peak(before, backend.stats());
  const mold::Bytes rss_peak = mold::read_host_peak_rss();
  return {dtype_name,
          size,
          peak,
          double(peak) / (double(size) * size * double(at::elementSize(dtype))),
          seconds,
          rss_peak_known && rss_peak > rss_before ? rss_peak - rss_before : 0};
}

/// Every dtype at every size, calling `on_point` after each (for progress).
/// Sets `failure`'s workload to the size being measured.
std::vector<Point> measure_points(
    const tools::Host& host, mold::Backend& backend,
    const CalibrateRequest& request,
    const std::function<void(const Point&)>& on_point,
    FailureContext& failure) {
  const auto vae =
      make_family_vae(*host.registry, request.family, request.arch, 0);
  at::Generator generator = at::detail::createCPUGenerator(1);
  std::vector<Point> points;
  for (const std::string& dtype_name : request.dtypes) {
    const at::ScalarType dtype = dtype_name == "bfloat16"  ? at::kBFloat16
                                 : dtype_name == "float16" ? at::kHalf
                                                           : at::kFloat;
    vae->to(backend.torch_device(), dtype);
    for (const int size : request.sizes) {
      if (request.arch ==
          mold::archs::kDefault) {  // the estimators describe it
        mold::Workload w;
        w.family = request.family;
        w.op = request.op;
        w.backend = request.backend;
        w.dtype = dtype_name;
        w.height = w.width = size;
        failure.workload = w;
      }
      points.push_back(measure_point(backend, *vae, request, dtype_name, dtype,
                                     size, generator));
      if (on_point) on_point(points.back());
    }
  }
  return points;
}

/// The command line recorded in the table's comment and source.
std::string calibration_command(const CalibrateRequest& request) {
  const bool published = request.arch == mold::archs::kDefault;
  return fmt::format(
      "molddiag calibrate --family {} --op {}{}{} --sizes {} --dtype {} "
      "--headroom {:g}{}",
      request.family, request.op, published ? "" : " --arch " + request.arch,
      request.backend == "cpu" ? "" : " --backend " + request.backend,
      request.sizes_text, request.dtypes_text, request.headroom,
      request.attention_from > 0
          ? fmt::format(" --attention-from {}", request.attention_from)
          : std::string());
}

/// One dtype: the per-pixel constant from the points below --attention-from
/// (the largest implied bytes per pixel, times the headroom), and the
/// attention term from the points at or above it. The TOML lines.
std::string one_dtype_constants(const std::vector<Point>& points,
                                const CalibrateRequest& request,
                                CalibrateResult& result) {
  std::vector<Point> per_pixel, attention;
  for (const auto& p : points)
    (request.attention_from > 0 && p.size >= request.attention_from ? attention
                                                                    : per_pixel)
        .push_back(p);
  double max_k = 0;
  for (const auto& p : per_pixel) max_k = std::max(max_k, p.implied);
  result.bytes_per_pixel = std::ceil(max_k * request.headroom);
  std::string block =
      fmt::format("bytes_per_pixel = {:g}\npoints = [", result.bytes_per_pixel);
  for (std::size_t i = 0; i < per_pixel.size(); ++i)
    block += fmt::format("{}[{}, {:.1f}]", i ? ", " : "",
                         per_pixel[i].size * per_pixel[i].size,
                         per_pixel[i].implied);
  block += "]\n";
  if (!attention.empty()) block += attention_term(attention, request, result);
  return block;
}

/// Several dtypes: bytes/px = k x element + k32 x 4 (the part computed in
/// float32 in every dtype): the non-negative (k, k32) nearest every point in
/// squared relative error. Returns {k, k32}, not yet raised to cover.
std::pair<double, double> fit_dtype_constants(
    const std::vector<Point>& points) {
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  for (const auto& p : points) {
    const double e = double(mold::dtype_size(p.dtype));
    const double y = std::max(p.implied * e, 1e-9);  // bytes per pixel
    const double u = e / y, v = 4 / y;               // rows scaled by 1/y
    aa += u * u;
    ab += u * v;
    bb += v * v;
    ay += u;
    by += v;
  }
  const double det = aa * bb - ab * ab;
  double k = 0, k32 = 0;
  if (std::abs(det) > 1e-12) {
    k = (ay * bb - ab * by) / det;
    k32 = (aa * by - ab * ay) / det;
  }
  if (k >= 0 && k32 >= 0) return {k, k32};
  // One constant alone, the better of the two.
  const double k_only = ay / aa, k32_only = by / bb;
  double error_k = 0, error_k32 = 0;
  for (const auto& p : points) {
    const double e = double(mold::dtype_size(p.dtype));
    const double y = std::max(p.implied * e, 1e-9);
    error_k += std::pow(k_only * e / y - 1, 2);
    error_k32 += std::pow(k32_only * 4 / y - 1, 2);
  }
  return error_k <= error_k32 ? std::pair{k_only, 0.0}
                              : std::pair{0.0, k32_only};
}

/// Several dtypes: the fit raised until every point is covered, times the
/// headroom; the TOML lines, with each point against the fit.
std::string dtype_constants(const std::vector<Point>& points,
                            const CalibrateRequest& request,
                            CalibrateResult& result) {
  const auto [k, k32] = fit_dtype_constants(points);
  double cover = 1;
  for (const auto& p : points) {
    const double e = double(mold::dtype_size(p.dtype));
    cover = std::max(cover, p.implied * e / (k * e + k32 * 4));
  }
  result.bytes_per_pixel = std::ceil(k * cover * request.headroom);
  result.float32_bytes_per_pixel = std::ceil(k32 * cover * request.headroom);
  std::string block =
      "# dtype, size: measured bytes per pixel -> the fit (ratio)\n";
  for (const auto& p : points) {
    const double e = double(mold::dtype_size(p.dtype));
    const double fit =
        result.bytes_per_pixel * e + result.float32_bytes_per_pixel * 4;
    block +=
        fmt::format("#   {} {}x{}: {:.1f} -> {:g} ({:.3f})\n", p.dtype, p.size,
                    p.size, p.implied * e, fit, fit / (p.implied * e));
  }
  block += fmt::format(
      "bytes_per_pixel = {:g}\nfloat32_bytes_per_pixel = "
      "{:g}\n",
      result.bytes_per_pixel, result.float32_bytes_per_pixel);
  return block;
}

/// Measures each size (calling `on_point` after each, for progress), builds
/// the calibration table and, with --write, writes it. Sets `failure`'s
/// workload to the size being measured.
CalibrateResult run(const tools::Host& host, const CalibrateRequest& request,
                    const std::function<void(const Point&)>& on_point,
                    FailureContext& failure) {
  const std::shared_ptr<mold::Backend> backend =
      host.registry->create_backend(request.backend);
  CalibrateResult result;
  result.points = measure_points(host, *backend, request, on_point, failure);
  const std::string date = calibration_date();
  const bool published = request.arch == mold::archs::kDefault;
  result.command = calibration_command(request);
  // Another architecture's constants go in its own [op.BACKEND.ARCH] table.
  const std::string table = request.op + "." + request.backend +
                            (published ? "" : "." + request.arch);
  std::string& block = result.block;
  block = fmt::format("[{}]\n", table);
  block += fmt::format("# measured by: {} ({}, {})\n", result.command,
                       backend->device_name(), date);
  block += request.dtypes.size() == 1
               ? one_dtype_constants(result.points, request, result)
               : dtype_constants(result.points, request, result);
  block +=
      fmt::format("headroom = {:g}\ncalibrated = true\n", request.headroom);
  block += fmt::format("source = \"{} on {}, {}, {} ({})\"\n", result.command,
                       backend->device_name(), request.dtypes_text,
                       peak_meaning(request.backend), date);
  if (!request.write.empty())
    mold::replace_toml_table(request.write, table, block, "--write");
  return result;
}

/// The points of an earlier run's --json output, their bases in the order of
/// `names` (this build's estimate's constants). Throws mold::Error naming
/// the file and what is wrong.
std::vector<PhasePoint> read_points(const std::string& file,
                                    const CalibrateRequest& request,
                                    const std::vector<std::string>& names) {
  constexpr std::uintmax_t kMaxPoints = 64ull << 20;
  const std::string text =
      mold::read_regular_file(file, kMaxPoints, "--points-from");
  nlohmann::json j;
  try {
    if (mold::json_nesting_depth(text) > mold::kMaxJsonNesting)
      throw std::invalid_argument("nested too deep");
    j = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    throw mold::Error(fmt::format(
        "--points-from {}: not JSON (give the output of molddiag calibrate "
        "--json)",
        file));
  }
  auto fail = [&](const std::string& what) {
    return mold::Error(fmt::format("--points-from {}: {}", file, what));
  };
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array())
    throw fail(
        "no \"points\" array (give the output of molddiag calibrate "
        "--json)");
  if (j.value("family", "") != request.family ||
      j.value("op", "") != request.op)
    throw fail(fmt::format("its points are of {} {}, not {} {}",
                           j.value("family", "?"), j.value("op", "?"),
                           request.family, request.op));
  std::vector<PhasePoint> points;
  const std::string label =
      std::filesystem::path(file).filename().string() + ": ";
  for (std::size_t i = 0; i < j["points"].size(); ++i) {
    const auto& item = j["points"][i];
    try {
      PhasePoint p;
      p.dtype = item.at("dtype").get<std::string>();
      p.size = item.at("size").get<int>();
      p.words = item.at("words").get<int>();
      p.tokens = item.at("tokens").get<int>();
      p.images = item.value("images", 0);
      p.peak = item.at("peak_bytes").get<mold::Bytes>();
      p.threads = item.value("threads", 1);
      if (p.threads < 1 || p.threads > mold::kMaxThreads)
        throw fail(fmt::format(
            "point {} has threads {}: it must be from 1 to {} (measure it "
            "again)",
            i + 1, p.threads, mold::kMaxThreads));
      p.thread_bytes = item.value("thread_bytes", mold::Bytes(0));
      if (p.thread_bytes > p.peak)
        throw fail(fmt::format(
            "point {} has thread_bytes {}, above its peak_bytes {}: the "
            "threads' scratch is part of the peak (measure it again)",
            i + 1, p.thread_bytes, p.peak));
      p.weight_bytes = item.value("weight_bytes", mold::Bytes(0));
      if (unfitted_bytes(p) > p.peak)
        throw fail(fmt::format(
            "point {} has weight_bytes {} and thread_bytes {}, together above "
            "its peak_bytes {}: both are part of the peak (measure it again)",
            i + 1, p.weight_bytes, p.thread_bytes, p.peak));
      p.weights = label + item.value("weights", std::string("?"));
      const auto& bases = item.at("bases");
      std::vector<std::string> have;
      for (const auto& [name, value] : bases.items()) have.push_back(name);
      std::vector<std::string> want = names;
      std::sort(have.begin(), have.end());
      std::sort(want.begin(), want.end());
      if (have != want) {
        std::string list;
        for (const auto& n : have) list += (list.empty() ? "" : ", ") + n;
        std::string wanted;
        for (const auto& n : want) wanted += (wanted.empty() ? "" : ", ") + n;
        throw fail(fmt::format(
            "point {} was measured with the terms {}; this build's estimate "
            "has {}: measure it again",
            i + 1, list, wanted));
      }
      for (const auto& name : names)
        p.bases.emplace_back(name, bases.at(name).get<double>());
      points.push_back(std::move(p));
    } catch (const nlohmann::json::exception& e) {
      throw fail(
          fmt::format("point {} is not a point of molddiag calibrate "
                      "--json ({})",
                      i + 1, e.what()));
    }
  }
  return points;
}

/// The command that reproduces a sequence table, files by name only (the
/// table goes into a repository).
std::string sequence_command(const CalibrateRequest& request) {
  // Files by name only: the table goes into a repository.
  auto name_of = [](const std::string& path) {
    const std::string name =
        std::filesystem::path(path).lexically_normal().filename().string();
    return name.empty() ? path : name;
  };
  std::string sources;
  for (const auto& file : request.points_from)
    sources += " --points-from " + name_of(file);
  return fmt::format(
      "molddiag calibrate --family {} --op {}{} {}{}{} --sizes {} --tokens {} "
      "--dtype {} --steps {} --headroom {:g}{}",
      request.family, request.op,
      request.backend == "cpu" ? "" : " --backend " + request.backend,
      request.model_dir.empty()
          ? "--arch " + request.arch
          : "--model-dir .../" + name_of(request.model_dir),
      request.model.empty() ? "" : " --model " + request.model,
      request.images_text.empty() ? "" : " --images " + request.images_text,
      request.sizes_text, request.tokens_text, request.dtypes_text,
      request.steps, request.headroom, sources);
}

/// The TOML table of a sequence op's fit, with each point's measured and
/// estimated bytes as comments.
std::string sequence_table(const CalibrateRequest& request,
                           const CalibrateResult& result,
                           const std::string& device, const std::string& date) {
  std::string block = fmt::format("[{}.{}]\n", request.op, request.backend);
  block +=
      fmt::format("# measured by: {} ({}, {})\n", result.command, device, date);
  block +=
      "# weights, dtype, size, tokens: measured working memory -> the "
      "estimate with these constants (ratio)\n";
  for (const auto& p : result.phase_points) {
    const double estimate = fitted_bytes(result.fit, p) * request.headroom +
                            double(unfitted_bytes(p));
    block += fmt::format(
        "#   {} {} {}x{} px, {} tokens{}{}: {} -> {} ({:.3f})\n", p.weights,
        p.dtype, p.size, p.size, p.tokens,
        p.images
            ? fmt::format(", {} image{}", p.images, p.images > 1 ? "s" : "")
            : "",
        p.threads > 1 ? fmt::format(", {} threads", p.threads) : "", p.peak,
        std::llround(estimate),
        estimate / double(std::max<mold::Bytes>(p.peak, 1)));
  }
  for (const auto& name : result.fit.never_largest)
    block += fmt::format(
        "# {}: its stage was the largest at no point; the largest factor "
        "of the measured stages, or less where that would take a point "
        "over\n",
        name);
  for (const auto& [name, value] : result.fit.constants)
    block += fmt::format("{} = {:.6g}\n", name, value);
  // Stage factors hold for every architecture (the counts carry the
  // widths); per-token constants for the one they were measured on.
  if (!result.fit.staged) block += fmt::format("arch = \"{}\"\n", request.arch);
  block +=
      fmt::format("headroom = {:g}\ncalibrated = true\n", request.headroom);
  block += fmt::format(
      "source = \"{} on {}, {}: {}\"\n", result.command, device,
      request.dtypes_text,
      request.backend == "cpu"
          ? fmt::format("each phase's peak above what was allocated when it "
                        "started, as the cpu backend's tracking allocator "
                        "counts it ({})",
                        date)
          : fmt::format("each phase's working peak ({}) ({})",
                        peak_meaning(request.backend), date));
  return block;
}

/// text_encode, denoise: the pipeline's phase at each (size, words), the
/// constants fitted to cover them, and the [op.cpu] table.
CalibrateResult run_sequence(
    const tools::Host& host, const CalibrateRequest& request,
    const std::function<void(const PhasePoint&)>& on_point) {
  CalibrateResult result;
  PhaseCalibration calibration{
      request.family,    request.op,    request.arch,   request.sizes,
      request.tokens,    request.model, request.images, request.dtypes,
      request.model_dir, request.steps, request.backend};
  result.phase_points = measure_phase(host, calibration, on_point);
  std::vector<std::string> names;
  for (const auto& [name, basis] : result.phase_points.front().bases)
    names.push_back(name);
  for (const auto& file : request.points_from)
    for (auto& p : read_points(file, request, names))
      result.phase_points.push_back(std::move(p));
  result.fit = fit_constants(result.phase_points);
  const std::string device =
      host.registry->create_backend(request.backend)->device_name();
  result.command = sequence_command(request);
  result.block = sequence_table(request, result, device, calibration_date());
  if (!request.write.empty())
    mold::replace_toml_table(request.write, request.op + "." + request.backend,
                             result.block, "--write");
  return result;
}

std::string rss_text(mold::Bytes rss_peak, mold::Bytes peak) {
  return rss_peak > peak
             ? fmt::format(
                   "process RSS peak +{}, {} of it not seen by the "
                   "tracking allocator",
                   mold::format_bytes(rss_peak),
                   mold::format_bytes(rss_peak - peak))
             : fmt::format(
                   "process RSS peak +{} (memory reused from earlier "
                   "runs)",
                   mold::format_bytes(rss_peak));
}

void print_point(const Point& p) {
  std::cout << fmt::format(
      "  {} {}x{}: peak {} ({} bytes), {:.1f} bytes/px/elem-byte, {:.1f} s; "
      "{}\n",
      p.dtype, p.size, p.size, mold::format_bytes(p.peak), p.peak, p.implied,
      p.seconds, rss_text(p.rss_peak, p.peak));
}

void print_phase_point(const PhasePoint& p) {
  std::cout << fmt::format(
      "  {} {}x{} px, {} tokens: peak {} ({} bytes), estimate now {} "
      "({:.3f}), {:.2f} s; {}\n",
      p.dtype, p.size, p.size, p.tokens, mold::format_bytes(p.peak), p.peak,
      mold::format_bytes(p.estimate),
      double(p.estimate) / double(std::max<mold::Bytes>(p.peak, 1)), p.seconds,
      rss_text(p.rss_peak, p.peak));
}

nlohmann::json bases_json(const PhasePoint& p) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, basis] : p.bases) out[name] = basis;
  return out;
}

nlohmann::json to_json(const CalibrateRequest& request,
                       const CalibrateResult& result) {
  if (is_sequence_op(request.op) || !request.from_history.empty()) {
    nlohmann::json constants = nlohmann::json::object();
    for (const auto& [name, value] : result.fit.constants)
      constants[name] = value;
    nlohmann::json out = {
        {"family", request.family},      {"op", request.op},
        {"arch", request.arch},          {"constants", constants},
        {"fit_scale", result.fit.scale}, {"headroom", request.headroom},
        {"command", result.command}};
    out["points"] = nlohmann::json::array();
    for (const auto& p : result.phase_points)
      out["points"].push_back(
          {{"weights", p.weights},
           {"dtype", p.dtype},
           {"size", p.size},
           {"words", p.words},
           {"images", p.images},
           {"bases", bases_json(p)},
           {"tokens", p.tokens},
           {"peak_bytes", p.peak},
           {"threads", p.threads},
           {"thread_bytes", p.thread_bytes},
           {"weight_bytes", p.weight_bytes},
           {"estimate_bytes", p.estimate},
           {"fitted_bytes",
            std::llround(fitted_bytes(result.fit, p) * request.headroom +
                         double(unfitted_bytes(p)))},
           {"seconds", p.seconds},
           {"rss_peak_bytes", p.rss_peak}});
    return out;
  }
  nlohmann::json out = {
      {"family", request.family},
      {"op", request.op},
      {"bytes_per_pixel", result.bytes_per_pixel},
      {"float32_bytes_per_pixel", result.float32_bytes_per_pixel},
      {"attention_fixed_bytes", result.attention_fixed_bytes},
      {"bytes_per_latent_score", result.bytes_per_latent_score},
      {"headroom", request.headroom},
      {"command", result.command}};
  out["points"] = nlohmann::json::array();
  for (const auto& p : result.points)
    out["points"].push_back({{"dtype", p.dtype},
                             {"size", p.size},
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

/// The fit subtracts the threads' scratch from each peak: with a kernel whose
/// scratch is modelled exactly, so that the table holds elsewhere (on an AMX
/// host: brgemm avx512_core_bf16; the estimates name the kernel). Refuses a
/// bfloat16 run where this CPU's kernel is only bounded. (Runs made here: a
/// table from a history, or a VAE's, subtracts none.)
void choose_exactly_modelled_kernel(const CalibrateRequest& request) {
  const auto kernel = mold::use_exactly_modelled_kernel();
  const bool bfloat16 = std::find(request.dtypes.begin(), request.dtypes.end(),
                                  "bfloat16") != request.dtypes.end();
  if (request.from_history.empty() && is_sequence_op(request.op) &&
      request.backend == "cpu" && bfloat16 &&
      !mold::scratch_modelled_exactly(kernel))
    throw tools::UsageError(fmt::format(
        "--dtype bfloat16: this CPU's bfloat16 products run with {}, whose "
        "scratch per thread mold bounds but does not model, so a fit less "
        "that scratch would not hold on other CPUs: calibrate float32 here, "
        "or bfloat16 on a CPU with AVX-512 and ONEDNN_MAX_CPU_ISA unset",
        mold::to_string(kernel)));
}

/// A plugin's own per-token op (not text_encode or denoise) must be one its
/// estimators know; UsageError listing the family's ops otherwise.
void check_plugin_op(const tools::Host& host, const CalibrateRequest& request) {
  if (!is_sequence_op(request.op) || request.op == mold::ops::kTextEncode ||
      request.op == mold::ops::kDenoise)
    return;
  std::vector<std::string> own;
  bool known = false;
  for (const auto& key : host.registry->estimator_keys()) {
    if (key.family != request.family) continue;
    if (key.op == request.op) known = true;
    if (key.op != mold::ops::kTextEncode && key.op != mold::ops::kDenoise &&
        key.op != mold::ops::kVaeDecode && key.op != mold::ops::kVaeEncode &&
        std::find(own.begin(), own.end(), key.op) == own.end())
      own.push_back(key.op);
  }
  if (known) return;
  std::string extra;
  for (const auto& op : own) extra += ", or " + request.family + "'s " + op;
  throw tools::UsageError(fmt::format(
      "--op {}: give vae_decode, vae_encode, text_encode or denoise{}",
      request.op, extra));
}

/// What a failed run's message says: the device, and what to make smaller.
FailureContext failure_context(const tools::Host& host,
                               const CalibrateRequest& request) {
  FailureContext failure;
  failure.registry = host.registry.get();
  failure.verbose = request.verbose;
  failure.backend = request.backend;
  if (request.backend == "cpu")
    failure.device = mold::CpuBackend::instance()->device_name();
  failure.extra_hints.push_back(
      is_sequence_op(request.op)
          ? "smaller --sizes or --tokens: each point is one whole run"
          : "smaller --sizes: each size is measured as one whole run");
  return failure;
}

void print_history_calibration(const CalibrateRequest& request,
                               const HistoryCalibration& learned) {
  if (request.json) {
    CalibrateResult result;
    result.phase_points = learned.points;
    result.fit = learned.fit;
    result.command = learned.command;
    nlohmann::json out = to_json(request, result);
    out["backend"] = learned.backend;
    out["device"] = learned.device;
    out["runs"] = learned.runs;
    tools::print_json(std::cout, out);
    return;
  }
  std::cout << fmt::format("{} runs of {} shapes on {} ({})\n\n", learned.runs,
                           learned.points.size(), learned.device,
                           learned.backend)
            << learned.block;
  if (!request.write.empty())
    std::cout << fmt::format("\nwritten to {}\n", request.write);
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args) {
  const auto parsed = parse_calibrate_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const CalibrateRequest& request = parsed.request;
  choose_exactly_modelled_kernel(request);
  const tools::Host host = tools::open_host(request.host);
  check_plugin_op(host, request);
  FailureContext failure = failure_context(host, request);
  if (!request.from_history.empty()) {
    print_history_calibration(request, calibrate_from_history(request));
    return tools::kOk;
  }
  CalibrateResult result;
  try {
    if (is_sequence_op(request.op)) {
      std::function<void(const PhasePoint&)> progress;
      if (!request.json) progress = print_phase_point;
      result = run_sequence(host, request, progress);
    } else {
      std::function<void(const Point&)> progress;
      if (!request.json) progress = print_point;
      result = run(host, request, progress, failure);
    }
  } catch (...) {
    rethrow_readable(failure);
  }
  print(request, result);
  return tools::kOk;
}

}  // namespace molddiag
