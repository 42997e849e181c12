// mold run: make images from a prompt. Every phase goes through the model
// cache with its estimate; progress lines on stderr, the images as PNGs whose
// text chunks say how each was made.

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/model_dir.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/device/backend.hpp>
#include <mold/net/server_address.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/json_recorder.hpp>
#include <mold/runtime/progress_printer.hpp>
#include <mold/runtime/runner.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/family_lookup.hpp"
#include "common/host.hpp"
#include "common/image_input.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "image_output.hpp"
#include "remote_run.hpp"
#include "run_plan.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;
namespace fs = std::filesystem;

namespace mold_cli {

namespace {

struct RunRequest {
  tools::HostOptions host;
  std::string model_spec;  ///< "z-image-turbo" or "z-image-turbo:bf16"
  mold::GenerateRequest generate;
  double guidance = -1;  ///< < 0: the model's default
  std::string output = ".";
  std::string dtype;  ///< empty: float32 for --tiny, else bfloat16
  std::vector<std::string> model_dirs;
  std::string backend = "cpu";
  bool tiny = false;
  bool plan = false;
  bool json = false;
  bool save_tensors = false;
  bool local = false;  ///< run here even with MOLD_HOST set
  std::string server;  ///< --host: a server to run on
  bool backend_given = false;
  std::vector<std::string> image_files;  ///< --image, in order
};

tools::Parsed<RunRequest> parse(const std::vector<std::string>& args) {
  tools::Parsed<RunRequest> parsed;
  RunRequest& r = parsed.request;
  mold::GenerateRequest& g = r.generate;
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
      "[models] dirs); --tiny runs a small architecture with seeded weights "
      "instead.\n"
      "Exit: 0 done; 1 failed (out of memory: what ran out, where, and what to "
      "do);\n"
      "2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "model", po::value(&r.model_spec)->required(),
      "model[:variant], e.g. z-image-turbo")(
      "prompt", po::value(&g.prompt)->required(), "what to draw")(
      "image", po::value(&r.image_files)->composing(),
      "a PNG to edit (edit models; repeatable, in the order the prompt "
      "names them: Picture 1, 2, ...)");
  tools::add_ranged_int(options, "width", &g.width, 16, 16384,
                        "image width in pixels (default: the model's)");
  tools::add_ranged_int(options, "height", &g.height, 16, 16384,
                        "image height in pixels (default: the model's)");
  tools::add_ranged_int(options, "steps", &g.steps, 1, 1000,
                        "denoising steps (default: the model's)");
  tools::add_ranged_int(options, "batch", &g.batch, 1, mold::kMaxBatch,
                        "images, seeds seed, seed + 1, ...", 1);
  tools::add_seed_option(options, "seed", &g.seed,
                         "noise seed of the first image (default 0)");
  options.add_options()(
      "guidance", po::value(&r.guidance),
      "classifier-free guidance scale; guidance runs the negative prompt too "
      "(Z-Image: any scale above 0) (default: the model's; Z-Image-Turbo: 0, "
      "none)")("negative", po::value(&g.negative_prompt),
               "negative prompt (when --guidance turns guidance on)")(
      "output,o", po::value(&r.output)->default_value("."),
      "directory for the images")(
      "dtype", po::value(&r.dtype),
      "float32, float16 or bfloat16 (default: bfloat16; float32 with "
      "--tiny)")("model-dir", po::value(&r.model_dirs)->composing(),
                 "a model directory, or a directory of them (repeatable)")(
      "backend", po::value(&r.backend)->default_value("cpu"),
      "where to run: cpu, cuda, ...")(
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
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("model", 1).add("prompt", 1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  const po::variables_map vm = tools::parse_args(args, options, &positional);
  r.backend_given = vm.count("backend") && !vm["backend"].defaulted();
  if (r.guidance >= 0) g.guidance = r.guidance;
  if (r.guidance < -0.0 && r.guidance != -1)
    throw tools::UsageError(
        fmt::format("--guidance {}: give 0 (none) or more", r.guidance));
  if (r.dtype.empty()) r.dtype = r.tiny ? "float32" : "bfloat16";
  return parsed;
}

void print_plan(std::ostream& out, const std::vector<PlanStep>& steps,
                const mold::Backend& backend, mold::Bytes available) {
  out << fmt::format("plan for one image on {} ({}): {} available\n",
                     backend.name(), backend.device_name(),
                     mold::format_bytes(available));
  for (const auto& s : steps) {
    out << fmt::format(
        "  {:<12} {:<13} estimate {:>10}  weights to load {:>10}  free "
        "{:>10}",
        s.phase.phase, s.phase.component, mold::format_bytes(s.estimate.bytes),
        mold::format_bytes(s.component_bytes),
        mold::format_bytes(s.free_before));
    if (!s.parked.empty()) {
      std::string parked;
      for (const auto& p : s.parked) parked += (parked.empty() ? "" : ", ") + p;
      out << "  parks " << parked;
    }
    std::string resident;
    for (const auto& p : s.resident)
      resident += (resident.empty() ? "" : ", ") + p;
    out << "  resident: " << (resident.empty() ? "none" : resident);
    if (!s.fits) out << "  DOES NOT FIT: " << s.problem;
    out << "\n";
    if (!s.estimate.source.empty())
      out << fmt::format("  {:<12} ({})\n", "", s.estimate.source);
  }
}

nlohmann::json plan_json(const std::vector<PlanStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : steps)
    out.push_back({{"phase", s.phase.phase},
                   {"component", s.phase.component},
                   {"estimate_bytes", s.estimate.bytes},
                   {"estimate_source", s.estimate.source},
                   {"weights_to_load_bytes", s.component_bytes},
                   {"free_bytes", s.free_before},
                   {"parks", s.parked},
                   {"resident", s.resident},
                   {"fits", s.fits},
                   {"problem", s.problem}});
  return out;
}

int run(const RunRequest& request) {
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, "molddiag plugins");
  tools::PreparedRun prepared =
      tools::prepare_run(host, request.model_spec, request.tiny,
                         request.model_dirs, request.dtype, request.backend);
  const std::shared_ptr<mold::Backend>& backend = prepared.backend;
  const tools::FailureContext& failure = prepared.failure;
  try {
    std::unique_ptr<mold::Pipeline> pipeline =
        prepared.found.family->make_pipeline(prepared.options);
    mold::ModelCache cache(backend, host.config.cache);
    mold::Runner runner(*pipeline, cache, *host.registry);

    if (request.plan) {
      const auto steps = simulate_plan(
          runner.plan(request.generate), pipeline->components(),
          cache.available(), host.config.cache.working_memory_floor,
          [&](const mold::Workload& w) {
            mold::RunContext context(cache, *host.registry, {});
            return context.estimate(w);
          });
      if (request.json) {
        const nlohmann::json plan = {{"model", pipeline->model()},
                                     {"variant", pipeline->variant()},
                                     {"backend", backend->name()},
                                     {"available_bytes", cache.available()},
                                     {"phases", plan_json(steps)}};
        tools::print_json(std::cout, plan);
      } else {
        print_plan(std::cout, steps, *backend, cache.available());
      }
      return tools::kOk;
    }

    mold::ProgressPrinter progress(std::cerr);
    mold::JsonRecorder recorder;
    runner.add_observer(&progress);
    if (request.json) runner.add_observer(&recorder);
    if (pipeline->seeded_weights())
      std::cerr << fmt::format("mold run: {} with {}\n", pipeline->model(),
                               pipeline->describe_weights());
    const mold::GenerateRequest resolved = pipeline->resolve(request.generate);
    runner.run(request.generate, [&](mold::ImageRecord& record,
                                     const mold::GeneratedImage& image) {
      record.path = choose_output_path(request.output, pipeline->model(),
                                       record.seed, request.save_tensors);
      const std::vector<mold::PngText> text =
          png_text(*pipeline, resolved, record.seed);
      if (request.save_tensors) {
        std::map<std::string, std::string> metadata;
        for (const auto& t : text) metadata[t.key] = t.value;
        fs::path tensors = record.path;
        mold::save_safetensors(tensors.replace_extension(".safetensors"),
                               image.tensors, metadata);
      }
      write_image(record.path, image.rgb, text);
    });
    if (request.json) {
      recorder.set_field("model", nlohmann::json(pipeline->model()).dump());
      recorder.set_field("variant", nlohmann::json(pipeline->variant()).dump());
      recorder.set_field("seeded_weights",
                         pipeline->seeded_weights() ? "true" : "false");
      recorder.set_field("weights",
                         nlohmann::json(pipeline->describe_weights()).dump());
      recorder.set_field("backend", nlohmann::json(backend->name()).dump());
      std::cout << recorder.dump() << "\n";
    }
    return tools::kOk;
  } catch (const mold::InvalidArgument&) {
    throw;
  } catch (...) {
    tools::rethrow_readable(failure);
  }
}

}  // namespace

/// The server a run goes to: --host, else MOLD_HOST; none with --local.
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
  if (!r.model_dirs.empty())
    local_only("--model-dir", "is the server's (mold serve --model-dir)");
  if (const char* key = std::getenv("MOLD_API_KEY")) remote.api_key = key;
  remote.model_spec = r.model_spec;
  remote.generate = r.generate;
  remote.tiny = r.tiny;
  remote.output = r.output;
  remote.json = r.json;
  return remote;
}

int run_command(const std::vector<std::string>& args) {
  auto parsed = parse(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  // The source images: read here, decoded here for a local run, sent as
  // they are (PNG bytes) to a server.
  std::vector<std::string> images;
  for (const std::string& file : parsed.request.image_files)
    images.push_back(tools::read_image_file(file, "--image"));
  if (auto remote = remote_target(parsed.request)) {
    remote->images_png = std::move(images);
    return run_remote(*remote);
  }
  for (std::size_t i = 0; i < images.size(); ++i)
    parsed.request.generate.images.push_back(
        tools::decode_source_image(parsed.request.image_files[i], images[i]));
  return run(parsed.request);
}

}  // namespace mold_cli
