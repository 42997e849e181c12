// molddiag vae's options (vae_options.hpp).

#include "vae_options.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <utility>

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

tools::Parsed<VaeRequest> parse_vae_options(
    const std::vector<std::string>& args) {
  tools::Parsed<VaeRequest> parsed;
  VaeRequest& r = parsed.request;
  std::string op, blend = "smootherstep", workspace = "64 MiB";
  int tile = 64, overlap = 16;
  po::options_description options(
      "molddiag vae encode|decode --family F --input X.safetensors --output "
      "Y.safetensors\n"
      "                  [--weights W.safetensors] [--mode "
      "whole|bounded|tiled|ladder] ...\n\n"
      "Runs one VAE operation. Tensors are NCHW float32: encode reads the "
      "tensor 'sample'\n"
      "(images in [-1, 1]) and writes 'latent'; decode reads 'latent' and "
      "writes 'sample'.\n"
      "A 5-D input with one frame (N, C, 1, H, W) is taken as NCHW. Latents "
      "are in the\n"
      "space diffusion pipelines use (Qwen-Image: (mean - latents_mean) / "
      "latents_std;\n"
      "Z-Image: (mean - 0.1159) * 0.3611) unless --raw-latent: then the VAE's "
      "own space\n"
      "(the encoder's mean; what the decoder takes). Encode writes the "
      "distribution's mean.\n"
      "An input with NaN or Inf values, an empty dimension or the wrong "
      "channels is refused.\n"
      "Without --weights the weights come from --seed. Exit: 0 done; 1 failed "
      "(out of\n"
      "memory: the label and hints); 2 usage or an input the VAE does not "
      "take.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "op", po::value(&op), "encode or decode")("family", po::value(&r.family),
                                                "qwen_image or zimage")(
      "weights", po::value(&r.weights),
      "a diffusers VAE checkpoint (.safetensors)")(
      "input", po::value(&r.input_path),
      "safetensors file with 'sample' or 'latent'")(
      "output", po::value(&r.output_path),
      "safetensors file to write (replaced atomically)")(
      "mode", po::value(&r.mode)->default_value("whole"),
      "whole, bounded (convolutions in bands), tiled, or ladder (whole -> "
      "bounded -> tiles -> cpu)")(
      "backend", po::value(&r.backend)->default_value("cpu"), "cpu, cuda, ...")(
      "arch", po::value(&r.arch)->default_value("default"),
      "default or tiny architecture");
  tools::add_seed_option(options, "seed", &r.seed,
                         "weights seed without --weights");
  tools::add_ranged_int(options, "tile", &tile, 1, 1024,
                        "tile edge in latent units (tiled)", 64);
  tools::add_ranged_int(options, "overlap", &overlap, 0, 1023,
                        "tile overlap in latent units", 16);
  options.add_options()("blend",
                        po::value(&blend)->default_value("smootherstep"),
                        "linear or smootherstep")(
      "workspace", po::value(&workspace)->default_value("64 MiB"),
      "bound on a convolution's temporary memory (bounded, ladder)")(
      "raw-latent", po::bool_switch(&r.raw_latent),
      "latents in the VAE's own space")(
      "allow-nonfinite", po::bool_switch(&r.settings.allow_nonfinite),
      "run an input with NaN or Inf values (refused by default)")(
      "verbose", po::bool_switch(&r.verbose),
      "on a libtorch error, print its full text, C++ backtrace included")(
      "json", po::bool_switch(&r.json), "print a JSON summary");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("op", 1);
  const auto vm = tools::parse_args(args, options, &positional);
  if (vm.count("help")) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  if (op != "encode" && op != "decode")
    throw tools::UsageError(
        "say what to do: molddiag vae encode ... or molddiag vae decode ...");
  for (const auto& [value, flag] : {std::pair{&r.family, "--family"},
                                    {&r.input_path, "--input"},
                                    {&r.output_path, "--output"}})
    if (value->empty())
      throw tools::UsageError(std::string(flag) + " is required");
  // Refused before any work: only a regular file (or a new one) is replaced.
  for (const auto& [path, flag] :
       {std::pair{&r.input_path, "--input"}, {&r.weights, "--weights"}})
    if (!path->empty()) {
      const std::string type = mold::describe_file_type(*path);
      if (type != "a regular file")
        throw tools::UsageError(
            type == "missing"
                ? fmt::format("{} {}: no such file", flag, *path)
                : fmt::format("{} {} is {}, not a safetensors file", flag,
                              *path, type));
    }
  if (const std::string type = mold::describe_file_type(r.output_path);
      type != "a regular file" && type != "missing" &&
      type != "a dangling symlink")
    throw tools::UsageError(fmt::format(
        "--output {} is {}: refusing to replace it; give the path of a "
        "regular file (or a new one)",
        r.output_path, type));
  mold::VaeSettings& job = r.settings;
  job.op = op == "encode" ? std::string(mold::ops::kVaeEncode)
                          : std::string(mold::ops::kVaeDecode);
  job.tile = tile;
  job.overlap = overlap;
  try {
    job.mode = mold::parse_vae_mode(r.mode);
    job.blend = mold::parse_blend(blend);
    job.workspace_bound = mold::parse_bytes(workspace);
  } catch (const mold::ParseError& e) {
    throw tools::UsageError(e.what());
  }
  if (tile <= 0 || overlap < 0 || overlap >= tile)
    throw tools::UsageError(fmt::format(
        "--tile {} --overlap {}: the tile must be positive and larger "
        "than the overlap",
        tile, overlap));
  // The estimators describe the published architecture only.
  job.predict = r.arch == mold::archs::kDefault;
  return parsed;
}

}  // namespace molddiag
