// molddiag vae encode|decode: one VAE operation on tensors from a safetensors
// file.

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <mold/device/cpu_backend.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/vae_runner.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

int vae_command(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string op, family, weights, input_path, output_path,
      mode = "whole", backend_name = "cpu", config = "default",
      blend = "smootherstep", workspace = "64 MiB";
  std::uint64_t seed = 0;
  int tile = 64, overlap = 16;
  bool raw_latent = false, json = false;
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
      "Without --weights the weights come from --seed. Exit: 0 done; 1 failed; "
      "2 usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "op", po::value(&op), "encode or decode")("family", po::value(&family),
                                                "qwen_image or zimage")(
      "weights", po::value(&weights),
      "a diffusers VAE checkpoint (.safetensors)")(
      "input", po::value(&input_path),
      "safetensors file with 'sample' or 'latent'")(
      "output", po::value(&output_path),
      "safetensors file to write (replaced atomically)")(
      "mode", po::value(&mode)->default_value("whole"),
      "whole, bounded (convolutions in bands), tiled, or ladder (whole -> "
      "bounded -> tiles -> cpu)")(
      "backend", po::value(&backend_name)->default_value("cpu"),
      "cpu, cuda, ...")("arch", po::value(&config)->default_value("default"),
                        "default or tiny architecture")(
      "seed", po::value(&seed)->default_value(0),
      "weights seed without --weights")("tile",
                                        po::value(&tile)->default_value(64),
                                        "tile edge in latent units (tiled)")(
      "overlap", po::value(&overlap)->default_value(16),
      "tile overlap in latent units")(
      "blend", po::value(&blend)->default_value("smootherstep"),
      "linear or smootherstep")(
      "workspace", po::value(&workspace)->default_value("64 MiB"),
      "bound on a convolution's temporary memory (bounded, ladder)")(
      "raw-latent", po::bool_switch(&raw_latent),
      "latents in the VAE's own space")("json", po::bool_switch(&json),
                                        "print a JSON summary");
  add_common_options(options, common);
  po::positional_options_description positional;
  positional.add("op", 1);
  const auto vm = parse(args, options, &positional);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return kOk;
  }
  if (op != "encode" && op != "decode")
    throw UsageError(
        "say what to do: molddiag vae encode ... or molddiag vae decode ...");
  for (const auto& [value, flag] : {std::pair{&family, "--family"},
                                    {&input_path, "--input"},
                                    {&output_path, "--output"}})
    if (value->empty()) throw UsageError(std::string(flag) + " is required");
  mold::VaeJob job;
  job.op = op == "encode" ? std::string(mold::ops::kVaeEncode)
                          : std::string(mold::ops::kVaeDecode);
  job.tile = tile;
  job.overlap = overlap;
  try {
    job.mode = mold::parse_vae_mode(mode);
    job.blend = mold::parse_blend(blend);
    job.workspace_bound = mold::parse_bytes(workspace);
  } catch (const mold::ParseError& e) {
    throw UsageError(e.what());
  }
  if (tile <= 0 || overlap < 0 || overlap >= tile)
    throw UsageError(fmt::format(
        "--tile {} --overlap {}: the tile must be positive and larger "
        "than the overlap",
        tile, overlap));

  const DiagContext context = make_context(common);
  warn_load_errors(*context.registry);
  const auto vae = make_family_vae(*context.registry, family, config, seed);
  if (!weights.empty()) vae->load(mold::SafetensorsFile::open(weights));

  const std::string input_name =
      job.op == mold::ops::kVaeEncode ? "sample" : "latent";
  const std::string output_name =
      job.op == mold::ops::kVaeEncode ? "latent" : "sample";
  at::Tensor input =
      mold::SafetensorsFile::open(input_path).tensor(input_name).to(at::kFloat);
  if (input.dim() == 5 && input.size(2) == 1) input = input.squeeze(2);
  if (input.dim() != 4)
    throw mold::InvalidArgument(
        fmt::format("{}: tensor '{}' has {} dimensions: give NCHW", input_path,
                    input_name, input.dim()));
  if (job.op == mold::ops::kVaeDecode && !raw_latent)
    input = vae->unscale_latent(input);
  job.input = input;
  job.predict = config == "default";

  auto backend = context.registry->create_backend(backend_name);
  auto cpu = context.registry->create_backend("cpu");
  backend->reset_peak();
  const mold::Bytes live = backend->stats().allocated;
  const auto start = std::chrono::steady_clock::now();
  mold::VaeJobResult result =
      mold::run_vae(*vae, *context.registry, job, backend, cpu);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const mold::Bytes peak = backend->stats().peak_allocated;
  at::Tensor output = result.output;
  if (job.op == mold::ops::kVaeEncode && !raw_latent)
    output = vae->scale_latent(output);
  mold::save_safetensors(output_path, {{output_name, output}},
                         {{"family", family},
                          {"op", job.op},
                          {"rung", result.rung},
                          {"latent_space", raw_latent ? "raw" : "scaled"}});

  nlohmann::json out = {
      {"family", family},       {"op", job.op},
      {"config", config},       {"weights", weights.empty() ? "seed" : weights},
      {"mode", mode},           {"rung", result.rung},
      {"output", output_path},  {"shape", output.sizes().vec()},
      {"seconds", seconds},     {"peak_bytes", peak > live ? peak - live : 0},
      {"backend", backend_name}};
  out["attempts"] = nlohmann::json::array();
  for (const auto& a : result.attempts)
    out["attempts"].push_back(
        {{"rung", a.rung},
         {"outcome", std::string(mold::to_string(a.outcome))},
         {"seconds", a.seconds},
         {"peak_bytes", a.peak_bytes},
         {"error", a.error}});
  if (json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} {} ({}, {}): {} -> '{}' {} in {}\n", family,
                             job.op, config, result.rung, input_name,
                             output_name, c10::str(output.sizes()),
                             output_path);
    std::cout << fmt::format("  {:.2f} s, peak {} above the {} live before\n",
                             seconds,
                             mold::format_bytes(peak > live ? peak - live : 0),
                             mold::format_bytes(live));
    for (const auto& a : result.attempts)
      std::cout << fmt::format("  {}: {}{}\n", a.rung,
                               mold::to_string(a.outcome),
                               a.error.empty() ? "" : " (" + a.error + ")");
  }
  return kOk;
}

}  // namespace molddiag
