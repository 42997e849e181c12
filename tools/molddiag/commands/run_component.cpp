// molddiag run-component: one component of a family (text encoder,
// transformer, VAE encoder or decoder) on tensors from a safetensors file,
// with seeded weights or a checkpoint, writing safetensors: what a user
// debugging a model, and a parity check against reference code, needs.

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <mold/base/error.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/family_lookup.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "run_component_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct RunComponentResult {
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
  std::string weights;  ///< the checkpoint, or "seeded (seed N)"
  std::string warning;  ///< unexpected checkpoint tensors
  double seconds = 0;
};

at::ScalarType scalar_type(const std::string& dtype) {
  return dtype == "float16"    ? at::kHalf
         : dtype == "bfloat16" ? at::kBFloat16
                               : at::kFloat;
}

/// The named tensor of the input file; `required` ones must be there.
at::Tensor input_tensor(const mold::SafetensorsFile& file,
                        const std::string& name, bool required) {
  if (!file.contains(name)) {
    if (!required) return {};
    std::string present;
    for (const auto& n : file.names())
      present += (present.empty() ? "" : ", ") + n;
    throw mold::InvalidArgument(
        fmt::format("{}: no tensor '{}'; it has: {}", file.path().string(),
                    name, present.empty() ? "none" : present));
  }
  return file.tensor(name);
}

at::Tensor as_float(const at::Tensor& t, at::ScalarType dtype) {
  return t.is_floating_point() ? t.to(dtype) : t;
}

/// Seeds or loads `module`; returns the description of its weights and the
/// load warning.
std::pair<std::string, std::string> give_weights(mold::Module& module,
                                                 const RunComponentRequest& r) {
  const at::ScalarType dtype = scalar_type(r.dtype);
  if (r.weights.empty()) {
    module.init_from_seed(r.seed, c10::Device(c10::kCPU), dtype);
    return {fmt::format("seeded (seed {})", r.seed), ""};
  }
  const mold::WeightSet weights = mold::WeightSet::open(r.weights);
  mold::LoadOptions options;
  options.prefix = module.stored_prefix(weights);
  const mold::LoadReport report =
      module.load(weights, c10::Device(c10::kCPU), dtype, options);
  return {weights.origin().string(), report.warning()};
}

RunComponentResult run(const tools::Host& host, const RunComponentRequest& r) {
  const mold::ModelFamily* family =
      &tools::require_family(*host.registry, r.family);
  const mold::SafetensorsFile input = mold::SafetensorsFile::open(r.input);
  const at::ScalarType dtype = scalar_type(r.dtype);
  const mold::ArchSpec arch = mold::ArchSpec::parse(r.arch);
  RunComponentResult result;
  std::vector<std::pair<std::string, at::Tensor>> outputs;
  at::NoGradGuard no_grad;
  const auto started = std::chrono::steady_clock::now();
  auto missing = [&](const char* what) {
    return mold::InvalidArgument(
        fmt::format("--family {} has no {} in this build", r.family, what));
  };
  if (r.component == "text_encoder") {
    if (!family->make_text_encoder) throw missing("text encoder");
    auto encoder = family->make_text_encoder(arch);
    std::tie(result.weights, result.warning) = give_weights(*encoder, r);
    at::Tensor ids = input_tensor(input, "input_ids", true);
    at::Tensor mask = input_tensor(input, "attention_mask", false);
    if (!mask.defined()) mask = at::ones_like(ids);
    outputs.emplace_back("hidden_states", encoder->encode(ids, mask));
  } else if (r.component == "transformer") {
    if (!family->make_transformer) throw missing("transformer");
    auto model = family->make_transformer(arch);
    std::tie(result.weights, result.warning) = give_weights(*model, r);
    mold::DenoiserInput in;
    in.latents = as_float(input_tensor(input, "latents", true), dtype);
    in.timestep =
        input_tensor(input, "timestep", true).to(at::kFloat).reshape({-1});
    in.text = as_float(input_tensor(input, "text", true), dtype);
    in.text_mask = input_tensor(input, "text_mask", false);
    if (!in.text_mask.defined())
      in.text_mask = at::ones({in.text.size(0), in.text.size(1)},
                              at::TensorOptions().dtype(at::kBool));
    in.text_mask = in.text_mask.to(at::kBool);
    outputs.emplace_back("output", model->forward(in));
  } else {
    if (!family->make_vae) throw missing("VAE");
    if (arch.name == mold::archs::kConfig)
      throw mold::InvalidArgument(
          "--arch: the VAEs have the built-in architectures only ('default', "
          "'tiny')");
    auto vae = family->make_vae(arch.name, r.seed);
    if (!r.weights.empty()) {
      std::tie(result.weights, result.warning) = give_weights(*vae, r);
    } else {
      vae->to(c10::Device(c10::kCPU), dtype);
      result.weights = fmt::format("seeded (seed {})", r.seed);
    }
    mold::VaeRunOptions options;
    if (r.component == "vae_encoder")
      outputs.emplace_back(
          "latent",
          vae->encode(as_float(input_tensor(input, "sample", true), dtype),
                      options));
    else
      outputs.emplace_back(
          "sample",
          vae->decode(as_float(input_tensor(input, "latent", true), dtype),
                      options));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  for (const auto& [name, t] : outputs)
    result.outputs.emplace_back(name, t.sizes().vec());
  mold::save_safetensors(r.output, outputs,
                         {{"family", r.family},
                          {"component", r.component},
                          {"arch", arch.describe()},
                          {"weights", result.weights}});
  return result;
}

void print(const RunComponentRequest& r, const RunComponentResult& result) {
  if (!result.warning.empty())
    std::cerr << fmt::format("molddiag run-component: warning: {}\n",
                             result.warning);
  if (r.json) {
    nlohmann::json out = {
        {"family", r.family},       {"component", r.component},
        {"arch", r.arch},           {"weights", result.weights},
        {"dtype", r.dtype},         {"output", r.output},
        {"seconds", result.seconds}};
    out["tensors"] = nlohmann::json::object();
    for (const auto& [name, shape] : result.outputs)
      out["tensors"][name] = shape;
    tools::print_json(std::cout, out);
    return;
  }
  for (const auto& [name, shape] : result.outputs)
    std::cout << fmt::format("{} {} ({}): {} {} -> {} in {:.3f} s\n", r.family,
                             r.component, result.weights, name,
                             c10::str(at::IntArrayRef(shape)), r.output,
                             result.seconds);
}

}  // namespace

int run_component_command(const std::vector<std::string>& args) {
  const auto parsed = parse_run_component_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const RunComponentRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  FailureContext failure;
  failure.registry = host.registry.get();
  failure.verbose = request.verbose;
  RunComponentResult result;
  try {
    result = run(host, request);
  } catch (const mold::Error&) {
    throw;
  } catch (...) {
    tools::rethrow_readable(failure);
  }
  print(request, result);
  return tools::kOk;
}

}  // namespace molddiag
