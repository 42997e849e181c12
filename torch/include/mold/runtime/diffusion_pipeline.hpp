#pragma once
/// What the families' diffusion pipelines share, so that a family writes only
/// its defaults, its prompt encoding and its denoise loop: the three components
/// (a text encoder, a transformer, a VAE) declared from seeded weights or a
/// model directory, the pipeline's identity and weight description, the
/// workload of an op, the noise drawn on the host, and the VAE's phases
/// through the recovery ladder with diffusers' post-processing.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/catalog/model_family.hpp"
#include "mold/runtime/module_component.hpp"
#include "mold/runtime/pipeline.hpp"

namespace mold {

class DiffusionPipeline : public Pipeline {
 public:
  std::string family() const override { return family_; }
  std::string model() const override { return options_.model; }
  std::string variant() const override { return options_.variant; }
  /// Whether some component is seeded (no directory, no file for it).
  bool seeded_weights() const override;
  /// The model directory, or "seeded weights (ARCH architecture, seed N)",
  /// and "; transformer from FILE" for each component given as a file.
  std::string describe_weights() const override;
  /// Each component's file(s) and layout, or its seed.
  std::vector<ComponentSource> component_sources() const override;
  /// The text encoder, the transformer and the VAE, in that order.
  std::vector<std::shared_ptr<CachedComponent>> components() const override;

 protected:
  /// `family` as the estimators key it ("zimage"); `family_name` as messages
  /// name it ("Z-Image"). Throws InvalidArgument for a dtype other than
  /// float32, float16 or bfloat16.
  DiffusionPipeline(std::string family, std::string family_name,
                    const PipelineOptions& options);

  bool seeded() const { return !options_.model_dir; }
  /// Where `component`'s weights come from: its folder of the model
  /// directory, or the weights' seed + `seed_offset`.
  WeightSource weight_source(std::string_view component,
                             std::uint64_t seed_offset) const;
  /// The ggml type a seeded q4 or q8 variant holds its transformer in (ggml's
  /// Q4_0, Q8_0), none for other variants or a model directory.
  std::optional<GgmlType> seeded_quantization() const;
  /// `component`'s architecture: the options' when seeded, else from its
  /// config.json in the model directory.
  ArchSpec arch_of(std::string_view component) const;
  /// Declares the components; each seeds or loads its weights when the cache
  /// first acquires it, under the memory limit like everything else.
  void declare_components(std::unique_ptr<Module> text_encoder,
                          WeightSource text_encoder_source,
                          std::unique_ptr<Module> transformer,
                          WeightSource transformer_source,
                          std::unique_ptr<Module> vae, WeightSource vae_source);

  /// The workload of `op` on this pipeline at the request's size: the
  /// family, model, backend, dtype, arch, compute threads, and whether the
  /// transformer is held quantized (for denoise).
  Workload workload(std::string_view op, const GenerateRequest& request,
                    int batch, int tokens) const;

  /// Standard-normal noise of `shape` from `seed`, drawn on the host in
  /// float32 whatever the backend: the same seed gives the same image
  /// everywhere, and the same noise as diffusers with a CPU torch.Generator.
  static at::Tensor host_noise(std::uint64_t seed, at::IntArrayRef shape);

  /// Throws Error (exit 1) naming the transformer's and the text encoder's
  /// files when `latents`, the denoising's result, holds NaN or Inf: what
  /// NaN weights make, caught before a VAE would spread them over a blank
  /// image.
  void check_denoised(const at::Tensor& latents) const;
  /// Runs `phase` (vae_decode) on `latents` (the denoiser's space) through
  /// the VAE's recovery ladder (after check_denoised()), and post-processes
  /// as diffusers does ([-1, 1] -> [0, 1] -> round(x * 255)): the image, with
  /// the tensors "latents" and "image" (float32, before rounding) for checks
  /// against reference code.
  GeneratedImage vae_decode(const PlannedPhase& phase,
                            const at::Tensor& latents, RunContext& context);
  /// Runs `phase` (vae_encode) on `image` ((1, 3, H, W) in [-1, 1]) through
  /// the ladder: the latent in the denoiser's space, on the host in the
  /// run's dtype.
  at::Tensor vae_encode(const PlannedPhase& phase, const at::Tensor& image,
                        RunContext& context);

  const PipelineOptions options_;
  const std::string family_name_;  ///< "Z-Image", "Qwen-Image"
  const at::ScalarType dtype_;
  /// "tiny" (seeded, the options' arch) or "default" (a model directory, or
  /// seeded at the published architecture).
  const std::string arch_;
  std::shared_ptr<ModuleComponent> text_encoder_, transformer_, vae_;

 private:
  const std::string family_;
};

}  // namespace mold
