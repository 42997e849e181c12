// molddiag run-component's options (run_component_options.hpp).

#include "run_component_options.hpp"

#include <fmt/format.h>

#include <mold/estimate/workload.hpp>

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

const char* const kComponents[] = {"text_encoder", "transformer", "vae_encoder",
                                   "vae_decoder"};

}  // namespace

tools::Parsed<RunComponentRequest> parse_run_component_options(
    const std::vector<std::string>& args) {
  tools::Parsed<RunComponentRequest> parsed;
  RunComponentRequest& r = parsed.request;
  po::options_description options(
      "molddiag run-component --family F --component C --input IN.safetensors "
      "--output OUT.safetensors [options]\n\n"
      "Runs one component of a family on the tensors of IN and writes its "
      "output to OUT\n"
      "(replaced only when complete). Tensors, by component:\n"
      "  text_encoder  input_ids (B, L) integer [attention_mask (B, L)]  -> "
      "hidden_states (B, L, D):\n"
      "                the hidden state the family's pipeline takes (Z-Image: "
      "the second-to-last layer)\n"
      "  transformer   latents (B, C, H, W), timestep (B,), text (B, L, D) "
      "[text_mask (B, L)]\n"
      "                -> output (B, C, H, W): the model's raw output, "
      "timestep as its forward takes it\n"
      "  vae_encoder   sample (B, 3, H, W) in [-1, 1] -> latent (the "
      "distribution's mean)\n"
      "  vae_decoder   latent -> sample\n"
      "Floating inputs are cast to --dtype. Weights: --weights (a "
      ".safetensors file, an index, or a\n"
      "component folder of a diffusers model directory), else seeded from "
      "--seed.\n"
      "Exit: 0 done; 1 failed; 2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "family", po::value(&r.family)->required(), "model family: zimage, ...")(
      "component", po::value(&r.component)->required(),
      "text_encoder, transformer, vae_encoder or vae_decoder")(
      "arch", po::value(&r.arch)->default_value("tiny"),
      "tiny, default (the published architecture) or the path of a "
      "config.json")("weights", po::value(&r.weights),
                     "checkpoint (default: seeded weights)")(
      "input", po::value(&r.input)->required(), "input safetensors file")(
      "output", po::value(&r.output)->required(), "output safetensors file")(
      "dtype", po::value(&r.dtype)->default_value("float32"),
      "float32, float16 or bfloat16")("json", po::bool_switch(&r.json),
                                      "print JSON")(
      "verbose", po::bool_switch(&r.verbose),
      "keep libtorch's full error text");
  tools::add_seed_option(options, "seed", &r.seed,
                         "seed of seeded weights (default 0)");
  tools::add_host_options(options, r.host);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options);
  bool known = false;
  for (const char* c : kComponents) known = known || r.component == c;
  if (!known)
    throw tools::UsageError(fmt::format(
        "--component {}: give text_encoder, transformer, vae_encoder or "
        "vae_decoder",
        r.component));
  if (!mold::is_compute_dtype(r.dtype))
    throw tools::UsageError(fmt::format("--dtype '{}': give {}", r.dtype,
                                        mold::compute_dtype_names()));
  return parsed;
}

}  // namespace molddiag
