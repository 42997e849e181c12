// molddiag calibrate's options (calibrate_options.hpp).

#include "calibrate_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/workload.hpp>
#include <sstream>

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

/// A comma-separated list of positive integers, each a multiple of
/// `multiple` and at most `max`; UsageError naming the flag otherwise.
std::vector<int> parse_list(const std::string& flag, const std::string& text,
                            int multiple, int max, const char* example) {
  std::vector<int> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v <= 0 || v % multiple || v > max)
        throw std::invalid_argument("value");
      if (std::find(values.begin(), values.end(), v) != values.end())
        throw tools::UsageError(fmt::format(
            "{} '{}': {} is given twice; each value is one measurement", flag,
            text, v));
      values.push_back(v);
    } catch (const tools::UsageError&) {
      throw;
    } catch (const std::exception&) {
      throw tools::UsageError(fmt::format(
          "{} '{}': give {} from {} to {} separated by commas, e.g. {}", flag,
          text,
          multiple > 1 ? fmt::format("multiples of {}", multiple)
                       : std::string("whole numbers"),
          multiple, max, example));
    }
  }
  if (values.empty()) throw tools::UsageError(flag + " is empty");
  return values;
}

}  // namespace

/// Every op but the VAE's is measured through the pipeline per token
/// (text_encode, denoise, and a plugin's own such as vision_encode).
bool is_sequence_op(const std::string& op) {
  return !op.empty() && op != mold::ops::kVaeDecode &&
         op != mold::ops::kVaeEncode;
}

tools::Parsed<CalibrateRequest> parse_calibrate_options(
    const std::vector<std::string>& args) {
  tools::Parsed<CalibrateRequest> parsed;
  CalibrateRequest& r = parsed.request;
  po::options_description options(
      "molddiag calibrate --family F --op OP [--sizes 128,256,384] [--tokens "
      "16,160]\n"
      "                   [--arch default|tiny | --model-dir DIR] [--dtype "
      "float32,bfloat16]\n"
      "                   [--points-from FILE.json] [--write "
      "calibration.toml] [--json]\n\n"
      "Measures an operation's working memory on the cpu backend (or "
      "--backend's; seeded weights, or a\n"
      "model directory's) in each --dtype as the peak bytes above what was "
      "live before\n"
      "(the tracking allocator's count), and fits the constants of its "
      "estimate:\n"
      "  vae_decode, vae_encode  the family's VAE at each size: bytes per "
      "pixel per\n"
      "                          element byte, and with several dtypes per "
      "float32 byte\n"
      "                          (--arch tiny: the [op.cpu.tiny] table).\n"
      "  text_encode, denoise    the family's pipeline at each size and "
      "prompt of --tokens\n"
      "                          words (one token each, plus the chat "
      "template's): a factor\n"
      "                          per counted stage (or bytes per token and "
      "per attention\n"
      "                          score), fitted to cover every point and "
      "those of\n"
      "                          --points-from (architecture tiny unless "
      "--arch or\n"
      "                          --model-dir says otherwise).\n"
      "With --write, replaces the [op.BACKEND] table ([op.BACKEND.tiny] for "
      "vae_* at --arch tiny)\nof that calibration file (other tables"
      "\n"
      "and comments are kept) with the constants, the points, headroom and "
      "this command.\n"
      "Exit: 0 done; 1 failed (out of memory: the label and hints); 2 "
      "usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")("family", po::value(&r.family),
                                               "qwen_image or zimage")(
      "op", po::value(&r.op), "vae_decode, vae_encode, text_encode or denoise")(
      "sizes", po::value(&r.sizes_text),
      "square image edges in pixels (vae_*: 128,256,384; text_encode: 64; "
      "denoise: 64,192,384)")(
      "tokens", po::value(&r.tokens_text),
      "prompt lengths in words (text_encode: 8,64,192,400; denoise: "
      "16,160)")(
      "arch", po::value(&r.arch),
      "default or tiny architecture (vae_*: default; text_encode, denoise: "
      "tiny)")("headroom", po::value(&r.headroom)->default_value(1.05),
               "factor over the measured points")(
      "write", po::value(&r.write),
      "calibration file whose [op.cpu] table to replace")(
      "verbose", po::bool_switch(&r.verbose),
      "on a libtorch error, print its full text, C++ backtrace included")(
      "model", po::value(&r.model),
      "the family's model to run (per-token ops; default: its first)")(
      "images", po::value(&r.images_text),
      "source images per run, e.g. 1,2,3 (edit models; each a square of the "
      "run's size)")(
      "dtype", po::value(&r.dtypes_text)->default_value("float32"),
      "float32, bfloat16 or float16, or several separated by commas: each "
      "point is measured in each, and one fit covers them all")(
      "model-dir", po::value(&r.model_dir),
      "a diffusers-format model directory to load instead of seeded weights "
      "(per-token ops; its config.json files give the architecture)")(
      "steps", po::value(&r.steps)->default_value(2),
      "denoising steps per run (per-token ops)")(
      "attention-from", po::value(&r.attention_from),
      "vae_*: the sizes from this one on fit an attention term over the "
      "latent's tokens (attention_fixed_bytes, bytes_per_latent_score), the "
      "smaller ones the per-pixel constant; one --dtype")(
      "points-from", po::value(&r.points_from),
      "the --json output of an earlier run of this family and op: its "
      "points join this run's in the fit (repeatable; per-token ops), e.g. "
      "a published directory's measured in bfloat16 beside the tiny "
      "architecture's")(
      "backend", po::value(&r.backend)->default_value("cpu"),
      "where the runs are made: cpu, or cuda, ... (the table written is "
      "[op.BACKEND]; a caching allocator's points are its reserved peaks)")(
      "from-history", po::value(&r.from_history),
      "fit the runs a device's measured history holds (a file `molddiag "
      "history` lists) instead of measuring now; the table is [op.BACKEND] "
      "of that device's backend (--arch default unless given)")(
      "json", po::bool_switch(&r.json), "print JSON");
  tools::add_host_options(options, r.host);
  const auto vm = tools::parse_args(args, options);
  if (vm.count("help")) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::refuse_empty(vm, {"sizes", "tokens", "images", "dtype"});
  if (r.family.empty()) throw tools::UsageError("--family is required");
  if (vm.count("from-history")) {
    for (const char* flag :
         {"sizes", "tokens", "images", "dtype", "model-dir", "points-from",
          "attention-from", "steps", "backend"})
      if (vm.count(flag) && !vm[flag].defaulted())
        throw tools::UsageError(fmt::format(
            "--{} and --from-history: the history's runs give the sizes, "
            "prompts and dtypes; drop --{}",
            flag, flag));
    const std::string type = mold::describe_file_type(r.from_history);
    if (type != "a regular file")
      throw tools::UsageError(
          type == "missing"
              ? fmt::format("--from-history {}: no such file (molddiag "
                            "history lists the files)",
                            r.from_history)
              : fmt::format("--from-history {} is {}, not a history file",
                            r.from_history, type));
    if (r.op.empty())
      throw tools::UsageError("--op is required: the op whose runs to fit");
    if (!(r.headroom >= 1.0 && r.headroom <= 2.0))
      throw tools::UsageError(
          fmt::format("--headroom {} must be between 1.0 and 2.0", r.headroom));
    if (r.arch.empty()) r.arch = mold::archs::kDefault;
  }
  if (vm.count("from-history")) {
    // The rest concerns runs made now.
  } else {
    const bool sequence = is_sequence_op(r.op);
    if (r.op != mold::ops::kVaeDecode && r.op != mold::ops::kVaeEncode &&
        !sequence)
      throw tools::UsageError(
          std::string("--op is required: vae_decode, vae_encode, text_encode, "
                      "denoise, or a per-token op of the family's (e.g. "
                      "vision_encode)"));
    if (!(r.headroom >= 1.0 && r.headroom <= 2.0))
      throw tools::UsageError(
          fmt::format("--headroom {} must be between 1.0 and 2.0", r.headroom));
    if (r.sizes_text.empty())
      r.sizes_text = !sequence                     ? "128,256,384"
                     : r.op == mold::ops::kDenoise ? "64,192,384"
                                                   : "64";
    {
      std::stringstream ss(r.dtypes_text);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (!mold::is_compute_dtype(item))
          throw tools::UsageError(fmt::format(
              "--dtype '{}': give {}, or several separated by commas",
              r.dtypes_text, mold::compute_dtype_names()));
        if (std::find(r.dtypes.begin(), r.dtypes.end(), item) == r.dtypes.end())
          r.dtypes.push_back(item);
      }
      if (r.dtypes.empty()) throw tools::UsageError("--dtype is empty");
    }
    if (!r.model_dir.empty()) {
      if (!sequence)
        throw tools::UsageError(
            "--model-dir is for the per-token ops (text_encode, denoise, ...): "
            "a VAE is measured alone, at --arch default");
      if (!r.arch.empty())
        throw tools::UsageError(
            "--model-dir and --arch: the directory's config.json files give "
            "the architecture; drop --arch " +
            r.arch);
      if (!std::filesystem::is_directory(r.model_dir))
        throw tools::UsageError(fmt::format(
            "--model-dir {}: no such directory (give a diffusers-format model "
            "directory)",
            r.model_dir));
      r.arch = mold::archs::kDefault;
    }
    if (r.attention_from != 0) {
      if (sequence)
        throw tools::UsageError(
            "--attention-from is for the VAE ops (vae_decode, vae_encode)");
      if (r.attention_from < 8 || r.attention_from > 16384)
        throw tools::UsageError(
            fmt::format("--attention-from {}: give a size from 8 to 16384",
                        r.attention_from));
      if (r.dtypes.size() != 1)
        throw tools::UsageError(
            "--attention-from takes one --dtype: the attention term is fitted "
            "per element byte of that dtype");
    }
    if (!r.points_from.empty() && !sequence)
      throw tools::UsageError(
          "--points-from is for the per-token ops (text_encode, denoise, ...)");
    for (const auto& file : r.points_from) {
      const std::string type = mold::describe_file_type(file);
      if (type != "a regular file")
        throw tools::UsageError(
            type == "missing"
                ? fmt::format("--points-from {}: no such file", file)
                : fmt::format("--points-from {} is {}, not a JSON file", file,
                              type));
    }
    if (r.steps < 1 || r.steps > 100)
      throw tools::UsageError(
          fmt::format("--steps {}: give 1 to 100", r.steps));
    if (r.arch.empty())
      r.arch = sequence ? mold::archs::kTiny : mold::archs::kDefault;
    if (r.arch != mold::archs::kDefault && r.arch != mold::archs::kTiny)
      throw tools::UsageError(
          fmt::format("--arch {}: give default or tiny", r.arch));
    if (sequence) {
      if (r.tokens_text.empty())
        r.tokens_text = r.op == mold::ops::kDenoise ? "16,160" : "8,64,192,400";
      r.tokens = parse_list("--tokens", r.tokens_text, 1, 500, "16,160");
      r.sizes = parse_list("--sizes", r.sizes_text, 16, 2048, "64,192,384");
      if (!r.images_text.empty())
        r.images = parse_list("--images", r.images_text, 1, 8, "1,2,3");
      // A fit is tested by points beyond the few that decide it; points of
      // an earlier run (--points-from) count too.
      const std::size_t points = r.sizes.size() * r.tokens.size() *
                                 std::max<std::size_t>(1, r.images.size()) *
                                 r.dtypes.size();
      if (points < 4 && r.points_from.empty())
        throw tools::UsageError(fmt::format(
            "--sizes {} and --tokens {} make {} point{}: a fit wants at least "
            "4 (each size is run with each prompt length and dtype)",
            r.sizes_text, r.tokens_text, points, points == 1 ? "" : "s"));
    } else {
      if (!r.tokens_text.empty())
        throw tools::UsageError(
            "--tokens is for text_encode and denoise: a VAE sees no prompt");
      if (!r.images_text.empty() || !r.model.empty())
        throw tools::UsageError(
            "--images and --model are for the per-token ops: the VAE is "
            "measured alone");
      r.sizes = parse_list("--sizes", r.sizes_text, 8, 16384, "128,256,384");
      if (r.attention_from > 0) {
        const auto above =
            std::count_if(r.sizes.begin(), r.sizes.end(),
                          [&](int size) { return size >= r.attention_from; });
        if (above < 2 || above == std::ptrdiff_t(r.sizes.size()))
          throw tools::UsageError(fmt::format(
              "--attention-from {} with --sizes {}: give at least two sizes "
              "from {} on (they fit the attention term) and one below (it "
              "fits the per-pixel constant)",
              r.attention_from, r.sizes_text, r.attention_from));
      }
    }
  }
  if (!r.write.empty()) {
    const std::string type = mold::describe_file_type(r.write);
    if (type != "a regular file")
      throw tools::UsageError(
          type == "missing"
              ? fmt::format("--write {}: no such calibration file", r.write)
              : fmt::format("--write {} is {}, not a calibration file", r.write,
                            type));
    // A binary or foreign file is refused before anything runs, and left as
    // it is (the table is written atomically, after the run, into a file that
    // passed this check).
    try {
      mold::CalibrationFile::check_write_target(r.write, r.family);
    } catch (const mold::ConfigError& e) {
      throw tools::UsageError(fmt::format(
          "--write: {}; it is left as it is. Give a calibration file (the "
          "plugin's calibration.toml, or a copy of it)",
          e.what()));
    }
  }
  return parsed;
}

}  // namespace molddiag
