#include "mold/runtime/diffusion_pipeline.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "mold/base/error.hpp"
#include "mold/catalog/components.hpp"
#include "mold/device/cpu_backend.hpp"
#include "mold/estimate/workload.hpp"
#include "mold/model/vae.hpp"
#include "mold/runtime/vae_runner.hpp"
#include "mold/tensor/compute_threads.hpp"

namespace mold {

namespace {

at::ScalarType compute_dtype(const std::string& dtype,
                             const std::string& family_name) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  throw InvalidArgument(fmt::format("--dtype {}: {} runs in {}", dtype,
                                    family_name, compute_dtype_names()));
}

}  // namespace

DiffusionPipeline::DiffusionPipeline(std::string family,
                                     std::string family_name,
                                     const PipelineOptions& options)
    : options_(options),
      family_name_(std::move(family_name)),
      dtype_(compute_dtype(options.dtype, family_name_)),
      arch_(options.model_dir ? std::string(archs::kDefault)
                              : options.arch.name),
      family_(std::move(family)) {}

std::string DiffusionPipeline::describe_weights() const {
  std::string out;
  const bool all_files =
      options_.component_files.count(components::kTextEncoder) &&
      options_.component_files.count(components::kTransformer) &&
      options_.component_files.count(components::kVae);
  if (options_.model_dir)
    out = options_.model_dir->string();
  else if (!all_files)
    out = fmt::format("seeded weights ({} architecture, seed {})", arch_,
                      options_.weights_seed);
  for (const auto& [component, file] : options_.component_files)
    out += fmt::format("{}{} from {}", out.empty() ? "" : "; ", component,
                       file.string());
  return out;
}

bool DiffusionPipeline::seeded_weights() const {
  for (const auto& component : components())
    if (const auto* module =
            dynamic_cast<const ModuleComponent*>(component.get()))
      if (module->source().seeded()) return true;
  return false;
}

std::vector<ComponentSource> DiffusionPipeline::component_sources() const {
  std::vector<ComponentSource> out;
  for (const auto& component : {text_encoder_, transformer_, vae_}) {
    if (!component) continue;
    ComponentSource source;
    source.component = component->name();
    source.bytes = component->device_bytes();
    if (const auto& mapping = component->mapping()) {
      for (const auto& file : component->source().files())
        source.files.push_back(file.string());
      source.layout = mapping->layout;
      source.description = mapping->description;
    } else {
      source.description = component->source().describe();
    }
    out.push_back(std::move(source));
  }
  return out;
}

std::vector<std::shared_ptr<CachedComponent>> DiffusionPipeline::components()
    const {
  return {text_encoder_, transformer_, vae_};
}

WeightSource DiffusionPipeline::weight_source(std::string_view component,
                                              std::uint64_t seed_offset) const {
  WeightSource source;
  source.layouts = options_.layouts;
  const auto file = options_.component_files.find(std::string(component));
  if (file != options_.component_files.end())
    source.checkpoint = file->second;
  else if (options_.model_dir)
    source.checkpoint = *options_.model_dir / std::string(component);
  else
    source.seed = options_.weights_seed + seed_offset;
  if (component == components::kTextEncoder) {
    const auto mmproj = options_.component_files.find("mmproj");
    if (mmproj != options_.component_files.end())
      source.more_files.push_back(mmproj->second);
  }
  return source;
}

std::optional<GgmlType> DiffusionPipeline::seeded_quantization() const {
  // Only seeded components take it (WeightSource::quantize); a checkpoint
  // says for itself what is quantized.
  if (options_.variant == "q4") return GgmlType::q4_0;
  if (options_.variant == "q8") return GgmlType::q8_0;
  return std::nullopt;
}

ArchSpec DiffusionPipeline::arch_of(std::string_view component) const {
  // A file given for a component has no config beside it: the model
  // directory's, else the published (or --tiny) architecture.
  return seeded()
             ? options_.arch
             : ArchSpec::from_config(*options_.model_dir /
                                     std::string(component) / "config.json");
}

void DiffusionPipeline::declare_components(std::unique_ptr<Module> text_encoder,
                                           WeightSource text_encoder_source,
                                           std::unique_ptr<Module> transformer,
                                           WeightSource transformer_source,
                                           std::unique_ptr<Module> vae,
                                           WeightSource vae_source) {
  auto warn = [](const std::string& message) {
    fmt::print(stderr, "warning: {}\n", message);
  };
  text_encoder_ = std::make_shared<ModuleComponent>(
      components::kTextEncoder, std::move(text_encoder),
      std::move(text_encoder_source), dtype_, warn);
  transformer_ = std::make_shared<ModuleComponent>(
      components::kTransformer, std::move(transformer),
      std::move(transformer_source), dtype_, warn);
  vae_ = std::make_shared<ModuleComponent>(components::kVae, std::move(vae),
                                           std::move(vae_source), dtype_, warn);
}

Workload DiffusionPipeline::workload(std::string_view op,
                                     const GenerateRequest& request, int batch,
                                     int tokens) const {
  Workload w;
  w.family = family_;
  w.model = options_.model;
  w.op = std::string(op);
  w.backend = options_.backend;
  w.dtype = options_.dtype;
  w.batch = batch;
  w.width = request.width;
  w.height = request.height;
  w.tokens = tokens;
  w.arch = arch_;
  w.threads = compute_threads(w.backend);
  // The op's weights are ggml blocks dequantized as each layer runs: the
  // text encoder's for the text encoding, the transformer's for denoising.
  const auto& weights = op == ops::kDenoise      ? transformer_
                        : op == ops::kTextEncode ? text_encoder_
                                                 : nullptr;
  w.quantized = weights && weights->quantized();
  return w;
}

at::Tensor DiffusionPipeline::host_noise(std::uint64_t seed,
                                         at::IntArrayRef shape) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return at::randn(shape, generator, at::kFloat);
}

void DiffusionPipeline::check_denoised(const at::Tensor& latents) const {
  if (std::isfinite(latents.sum().item<double>())) return;
  const auto bad = at::isfinite(latents).logical_not().sum().item<int64_t>();
  const auto nan = at::isnan(latents).sum().item<int64_t>();
  if (bad == 0) return;  // a finite tensor whose sum overflowed
  auto source = [](const std::shared_ptr<ModuleComponent>& component) {
    return component ? component->describe_source() : std::string("none");
  };
  throw Error(fmt::format(
      "the denoised latents have {} of their {} values not finite ({} NaN, "
      "{} Inf), so the image would be blank. They come from the transformer "
      "({}) conditioned by the text encoder ({}): a checkpoint with NaN or "
      "Inf weights, or a config value far out of range, makes this. Check "
      "those files (re-download them, or use the model's other file)",
      bad, latents.numel(), nan, bad - nan, source(transformer_),
      source(text_encoder_)));
}

GeneratedImage DiffusionPipeline::vae_decode(const PlannedPhase& phase,
                                             const at::Tensor& latents,
                                             RunContext& context) {
  GeneratedImage generated;
  generated.tensors.emplace_back("latents", latents.to(at::kFloat));
  check_denoised(latents);
  context.run_phase(phase, [&](PhaseScope& scope) {
    auto& vae =
        dynamic_cast<Vae&>(scope.component_as<ModuleComponent>().module());
    VaeJob job;
    job.op = std::string(ops::kVaeDecode);
    job.mode = VaeMode::ladder;
    job.dtype = options_.dtype;
    job.predict = arch_ != archs::kConfig;  // the built-ins have tables
    job.input = vae.unscale_latent(latents.to(dtype_));
    const VaeJobResult result =
        run_vae(vae, context.registry(), job, context.cache().shared_backend(),
                CpuBackend::instance());
    scope.set_detail("vae " + result.rung);
    at::Tensor image = result.output.to(at::kCPU).to(at::kFloat);
    generated.rgb = (image[0] * 0.5 + 0.5)
                        .clamp(0, 1)
                        .mul(255)
                        .round()
                        .to(at::kByte)
                        .contiguous();
    generated.tensors.emplace_back("image", image);
  });
  return generated;
}

at::Tensor DiffusionPipeline::vae_encode(const PlannedPhase& phase,
                                         const at::Tensor& image,
                                         RunContext& context) {
  at::Tensor latent;
  context.run_phase(phase, [&](PhaseScope& scope) {
    auto& vae =
        dynamic_cast<Vae&>(scope.component_as<ModuleComponent>().module());
    VaeJob job;
    job.op = std::string(ops::kVaeEncode);
    job.mode = VaeMode::ladder;
    job.dtype = options_.dtype;
    job.predict = arch_ != archs::kConfig;  // the built-ins have tables
    job.input = image.to(dtype_);
    const VaeJobResult result =
        run_vae(vae, context.registry(), job, context.cache().shared_backend(),
                CpuBackend::instance());
    scope.set_detail("vae " + result.rung);
    latent = vae.scale_latent(result.output.to(at::kCPU).to(dtype_));
  });
  return latent;
}

}  // namespace mold
