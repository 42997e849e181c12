// mold run: make images from a prompt, here or on a server. The command line
// is read here (torch-free); a remote run goes from here (remote_run.hpp), a
// run here to run_local().

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/net/server_address.hpp>
#include <mold/plan/generate_schema.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/generate_options.hpp"
#include "common/options.hpp"
#include "common/source_image_file.hpp"
#include "run_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace mold_cli {

tools::Parsed<RunRequest> parse_run_options(
    const std::vector<std::string>& args) {
  tools::Parsed<RunRequest> parsed;
  RunRequest& r = parsed.request;
  mold::GenerateSettings& g = r.generate;
  po::options_description options(
      "mold run MODEL[:VARIANT] PROMPT [options]\n\n"
      "Makes --batch images of PROMPT (image i with seed + i): the text "
      "encoder, the\n"
      "denoiser's steps and the VAE decode, each phase through the model "
      "cache, which\n"
      "parks other components when the phase's estimate does not fit. "
      "Progress lines on\n"
      "stderr; PNGs in --output, named MODEL-SEED.png (never replacing a "
      "file).\n"
      "Weights come from a diffusers-format model directory (--model-dir, "
      "MOLD_MODELS_DIR,\n"
      "[models] dirs), or per component from a file (--transformer, --vae, "
      "--text-encoder:\n"
      "single files and GGUFs in the layouts mold detects, see "
      "docs/models.md); --tiny runs a\n"
      "small architecture with seeded weights instead.\n"
      "Exit: 0 done; 1 failed (out of memory: what ran out, where, and what to "
      "do);\n"
      "2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "model", po::value(&r.model_spec)->required(),
      "model[:variant], e.g. z-image-turbo")(
      "image", po::value(&r.image_files)->composing(),
      "a PNG to edit (edit models; repeatable, in the order the prompt "
      "names them: Picture 1, 2, ...)");
  // prompt, negative, width, height, steps, guidance, seed, batch.
  tools::add_generate_options(options, g);
  options.add_options()("output,o", po::value(&r.output)->default_value("."),
                        "directory for the images")(
      "dtype", po::value(&r.dtype),
      "float32, float16 or bfloat16 (default: bfloat16; float32 with "
      "--tiny)")("model-dir", po::value(&r.model_dirs)->composing(),
                 "a model directory, or a directory of them (repeatable)")(
      "backend", po::value(&r.backend)->default_value("cpu"),
      "where to run: cpu, cuda, ...")(
      "transformer", po::value<std::string>(),
      "the transformer (denoiser) from this file: a .safetensors or .gguf "
      "in any layout mold detects (diffusers, ComfyUI, GGUF)")(
      "vae", po::value<std::string>(),
      "the VAE from this file (diffusers, LDM ae.safetensors, Wan)")(
      "text-encoder", po::value<std::string>(),
      "the text encoder from this file (transformers' names, or a llama.cpp "
      "GGUF)")("mmproj", po::value<std::string>(),
               "the vision tower's llama.cpp mmproj GGUF, beside a GGUF "
               "--text-encoder (edit models)")(
      "tiny", po::bool_switch(&r.tiny),
      "a tiny architecture with seeded weights (no download; images are "
      "noise-like, labelled as seeded)")(
      "plan", po::bool_switch(&r.plan),
      "print each phase's estimate, what would be resident and free, and "
      "exit without running")("json", po::bool_switch(&r.json),
                              "print a JSON report on stdout")(
      "host", po::value(&r.server),
      "run on this mold server (host, host:port or http://host:port; "
      "default: MOLD_HOST)")(
      "local", po::bool_switch(&r.local),
      "run on this machine even when MOLD_HOST names a server")(
      "save-tensors", po::bool_switch(&r.save_tensors),
      "also write MODEL-SEED.safetensors beside each PNG: the final latents "
      "and the decoded image before rounding (for checks against reference "
      "code)");
  tools::add_ranged_int(
      options, "threads", &r.threads, 1, 4096,
      "compute threads: libtorch's and the BLAS's pools (default: "
      "OMP_NUM_THREADS, else the CPUs this process may run on: its affinity "
      "mask, capped by a cgroup CPU quota)");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("model", 1).add("prompt", 1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  const po::variables_map vm = tools::parse_args(args, options, &positional);
  r.backend_given = vm.count("backend") && !vm["backend"].defaulted();
  tools::refuse_tiny_with_model_dirs(r.tiny, r.model_dirs);
  tools::refuse_empty(vm, {"dtype", "output", "backend", "host", "transformer",
                           "vae", "text-encoder", "mmproj"});
  for (const char* flag : {"transformer", "vae", "text-encoder", "mmproj"})
    if (vm.count(flag)) {
      std::string component = flag;
      for (char& c : component)
        if (c == '-') c = '_';
      r.component_files[component] = vm[flag].as<std::string>();
    }
  try {
    mold::check_generate_settings(g);
  } catch (const mold::InvalidArgument& e) {
    throw tools::UsageError(e.what());
  }
  if (r.dtype.empty()) r.dtype = r.tiny ? "float32" : "bfloat16";
  if (!mold::is_compute_dtype(r.dtype))
    throw tools::UsageError(fmt::format("--dtype '{}': give {}", r.dtype,
                                        mold::compute_dtype_names()));
  return parsed;
}

std::optional<RemoteRun> remote_target(const RunRequest& r) {
  if (r.local) return std::nullopt;
  std::string text = r.server, source = "--host " + r.server;
  if (text.empty()) {
    const char* env = std::getenv("MOLD_HOST");
    if (!env || !*env) return std::nullopt;
    text = env;
    source = fmt::format("MOLD_HOST={}", env);
  }
  RemoteRun remote;
  try {
    remote.server = mold::net::parse_server_address(
        text, r.server.empty() ? "MOLD_HOST" : "--host");
  } catch (const mold::InvalidArgument& e) {
    throw tools::UsageError(e.what());
  }
  remote.server_source = mold::escape_control(source);
  auto local_only = [&](const char* flag, const char* why) {
    throw tools::UsageError(fmt::format(
        "{} {} ({} sends the run to {}): add --local to run here", flag, why,
        r.server.empty() ? "MOLD_HOST" : "--host", remote.server.display()));
  };
  if (r.plan) local_only("--plan", "shows this machine's plan");
  if (r.save_tensors)
    local_only("--save-tensors", "needs the tensors, which stay on the server");
  if (r.backend_given)
    local_only("--backend", "is chosen by the server (mold serve --backend)");
  if (r.threads > 0)
    local_only("--threads", "is the server's (mold serve --threads)");
  if (!r.model_dirs.empty())
    local_only("--model-dir", "is the server's (mold serve --model-dir)");
  for (const auto& [component, file] : r.component_files)
    local_only(component == "text_encoder"  ? "--text-encoder"
               : component == "transformer" ? "--transformer"
               : component == "vae"         ? "--vae"
                                            : "--mmproj",
               "names a file here; the server's come from its config");
  if (const char* key = std::getenv("MOLD_API_KEY")) remote.api_key = key;
  remote.model_spec = r.model_spec;
  remote.generate = r.generate;
  remote.tiny = r.tiny;
  remote.output = r.output;
  remote.json = r.json;
  return remote;
}

int run_command(const std::vector<std::string>& args) {
  auto parsed = parse_run_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  // The source images: read here, decoded here for a local run, sent as
  // they are (PNG bytes) to a server.
  if (parsed.request.image_files.size() > tools::kMaxSourceImages)
    throw mold::InvalidArgument(fmt::format(
        "--image is given {} times; a request takes at most {} source "
        "images",
        parsed.request.image_files.size(), tools::kMaxSourceImages));
  std::vector<std::string> images;
  for (const std::string& file : parsed.request.image_files)
    images.push_back(tools::read_image_file(file, "--image"));
  std::vector<tools::NamedPng> named;
  for (std::size_t i = 0; i < images.size(); ++i)
    named.push_back({"--image " + parsed.request.image_files[i], images[i]});
  tools::check_source_image_budget(named);
  if (auto remote = remote_target(parsed.request)) {
    remote->images_png = std::move(images);
    return run_remote(*remote);
  }
  return run_local(parsed.request, images);
}

}  // namespace mold_cli
