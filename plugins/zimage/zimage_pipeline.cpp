#include "zimage_pipeline.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <mold/base/error.hpp>
#include <mold/catalog/components.hpp>
#include <mold/config/json_config.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/chat_template.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/scheduler.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/tokenizer.hpp>
#include <mold/model/vae.hpp>
#include <mold/plan/family_limits.hpp>
#include <mold/plan/field_naming.hpp>
#include <mold/runtime/diffusion_pipeline.hpp>
#include <mold/runtime/encoding_memo.hpp>
#include <mold/runtime/module_component.hpp>

#include "qwen3_text_encoder.hpp"
#include "zimage_transformer.hpp"

namespace zimage {

namespace fs = std::filesystem;
using mold::components::kTextEncoder;
using mold::components::kTransformer;
using mold::components::kVae;

namespace {

constexpr const char* kFamily = "zimage";
constexpr int kMaxSequenceLength = 512;  // the pipeline's max_sequence_length
constexpr int kSizeMultiple = 16;        // vae_scale_factor * 2
constexpr int kLatentChannels = 16;

class ZImagePipeline final : public mold::DiffusionPipeline {
 public:
  ZImagePipeline(const PipelineFactories& factories,
                 const mold::PipelineOptions& options)
      : DiffusionPipeline(kFamily, "Z-Image", options) {
    if (seeded()) {
      tokenizer_ =
          std::make_shared<const mold::BpeTokenizer>(mold::BpeTokenizer::load(
              factories.tokenizer_json, factories.tokenizer_config));
      scheduler_ = mold::FlowMatchConfig::zimage_turbo();
    } else {
      const fs::path& dir = *options.model_dir;
      tokenizer_ = std::make_shared<const mold::BpeTokenizer>(
          mold::BpeTokenizer::load(dir / "tokenizer"));
      scheduler_ = mold::FlowMatchConfig::from_json(
          mold::JsonConfig::read(dir / "scheduler" / "scheduler_config.json"));
    }
    std::unique_ptr<mold::TextEncoder> text_encoder =
        factories.text_encoder(arch_of(kTextEncoder));
    std::unique_ptr<mold::Denoiser> transformer =
        factories.transformer(arch_of(kTransformer));
    if (const auto* qwen3 =
            dynamic_cast<const Qwen3TextEncoder*>(text_encoder.get()))
      text_dims_ = text_encoder_dims(qwen3->config());
    if (const auto* dit =
            dynamic_cast<const ZImageTransformer*>(transformer.get())) {
      transformer_dims_ = transformer_dims(dit->config());
      // A side has fewer patches than its RoPE axis has positions
      // (axes_lens[1], axes_lens[2]); one patch is kSizeMultiple pixels.
      const auto& lens = dit->config().axes_lens;
      if (lens.size() == 3)
        max_side_ = int(std::min<std::int64_t>(
            16384, (std::min(lens[1], lens[2]) - 1) * kSizeMultiple));
    }
    if (transformer->in_channels() != kLatentChannels)
      throw mold::ConfigError(
          seeded() ? fs::path("<built-in>")
                   : *options.model_dir / kTransformer / "config.json",
          0, "in_channels",
          fmt::format("is {}; the FLUX VAE's latents have {} channels",
                      transformer->in_channels(), kLatentChannels));
    estimators_ = factories.estimators;
    FluxVaeConfig vae_config;
    if (seeded())
      vae_config.arch = options.arch.name;
    else
      vae_config =
          read_flux_vae_config(*options.model_dir / kVae / "config.json");
    std::unique_ptr<mold::Vae> vae = factories.vae(vae_config);
    // The q4 and q8 variants quantize the transformer only (the published
    // GGUF files do): seeded weights as ggml's Q4_0 / Q8_0 blocks; a model
    // directory's transformer/ holds its GGUF file.
    mold::WeightSource transformer_source = weight_source(kTransformer, 2);
    transformer_source.quantize = seeded_quantization();
    declare_components(std::move(text_encoder), weight_source(kTextEncoder, 1),
                       std::move(transformer), std::move(transformer_source),
                       std::move(vae), weight_source(kVae, 3));
  }

  mold::GenerateRequest resolve(
      const mold::GenerateRequest& request) const override {
    mold::GenerateRequest r = request;
    if (!r.images.empty())
      throw mold::InvalidArgument(fmt::format(
          "{}: {} makes images from text and takes no source image; use "
          "qwen-image-edit-2511 to edit one",
          mold::field_label("images", r.naming), options_.model));
    const int default_size = arch_ == mold::archs::kTiny ? 256 : 1024;
    if (r.width == 0) r.width = default_size;
    if (r.height == 0) r.height = default_size;
    if (r.steps == 0) r.steps = 8;      // Z-Image-Turbo's 8 model evaluations
    if (!r.guidance) r.guidance = 0.0;  // Turbo is distilled: no CFG
    mold::check_family_limits(r, {"Z-Image", kSizeMultiple, max_side_, 1, ""});
    return r;
  }

  std::vector<mold::PlannedPhase> plan(
      const mold::GenerateRequest& r) const override {
    const bool cfg = uses_cfg(r);
    const int prompt_tokens = int(prompt_ids(r.prompt).size());
    std::vector<mold::PlannedPhase> phases;
    auto planned = [](std::string_view op, const char* component,
                      mold::Workload w, int steps) {
      mold::PlannedPhase phase;
      phase.phase = std::string(op);
      phase.component = component;
      phase.workload = std::move(w);
      phase.steps = steps;
      return phase;
    };
    phases.push_back(
        planned(mold::ops::kTextEncode, kTextEncoder,
                workload(mold::ops::kTextEncode, r, 1, prompt_tokens), 0));
    if (cfg)
      phases.push_back(planned(
          mold::ops::kTextEncode, kTextEncoder,
          workload(mold::ops::kTextEncode, r, 1,
                   int(prompt_ids(r.negative_prompt.value_or("")).size())),
          0));
    phases.push_back(planned(
        mold::ops::kDenoise, kTransformer,
        workload(mold::ops::kDenoise, r, cfg ? 2 : 1, prompt_tokens), r.steps));
    phases.push_back(planned(mold::ops::kVaeDecode, kVae,
                             workload(mold::ops::kVaeDecode, r, 1, 0), 0));
    // The registered estimators know the built-in architectures; a model
    // directory's is estimated here, from the sizes its config.json gave.
    if (options_.model_dir && estimators_) {
      for (auto& phase : phases) {
        if (phase.phase == mold::ops::kTextEncode && text_dims_.hidden)
          phase.estimate = estimators_->text_encode(phase.workload, text_dims_);
        if (phase.phase == mold::ops::kDenoise && transformer_dims_.dim)
          phase.estimate =
              estimators_->denoise(phase.workload, transformer_dims_);
      }
    }
    return phases;
  }

  mold::GeneratedImage generate(const mold::GenerateRequest& r,
                                std::uint64_t seed,
                                mold::RunContext& context) override {
    const std::vector<mold::PlannedPhase> phases = plan(r);
    const bool cfg = uses_cfg(r);
    std::size_t next = 0;

    // The prompt's embeddings, or those kept from the last image of the
    // same prompt (images 2..N of a batch; a server's next request).
    at::Tensor text, negative;
    const std::string key = mold::EncodingMemo::key_of(r, cfg);
    if (const auto* kept = memo_.find(key)) {
      text = (*kept)[0];
      context.reuse_phase(phases[next++], kept_detail(text));
      if (cfg) {
        negative = (*kept)[1];
        context.reuse_phase(phases[next++], kept_detail(negative));
      }
    } else {
      text = encode(phases[next++], r.prompt, context);
      if (cfg)
        negative =
            encode(phases[next++], r.negative_prompt.value_or(""), context);
      memo_.keep(key, {text, negative});
    }

    const int64_t lh = 2 * (r.height / kSizeMultiple);
    const int64_t lw = 2 * (r.width / kSizeMultiple);
    at::Tensor latents = host_noise(seed, {1, kLatentChannels, lh, lw});

    const mold::PlannedPhase& denoise = phases[next++];
    context.run_phase(denoise, [&](mold::PhaseScope& scope) {
      auto& component = scope.component_as<mold::ModuleComponent>();
      const auto& model = dynamic_cast<const mold::Denoiser&>(
          static_cast<const mold::ModuleComponent&>(component).module());
      const c10::Device device = model.device();
      const long image_tokens = long(lh / 2) * long(lw / 2);
      // The pipeline's own sigmas, linspace(1, 1/steps, steps) (torch's, in
      // float32), through the scheduler's set_timesteps(sigmas=...): every
      // step a model evaluation.
      const at::Tensor linspace =
          at::linspace(1.0, 1.0 / r.steps, r.steps,
                       at::TensorOptions().dtype(at::kFloat))
              .contiguous();
      const std::vector<float> sigmas(
          linspace.data_ptr<float>(),
          linspace.data_ptr<float>() + linspace.numel());
      const mold::FlowMatchSchedule schedule =
          mold::flow_match_schedule_from_sigmas(
              scheduler_, sigmas,
              scheduler_.use_dynamic_shifting
                  ? std::optional<double>(
                        mold::flow_match_mu(scheduler_, image_tokens))
                  : std::nullopt);
      at::NoGradGuard no_grad;
      latents = latents.to(device);
      at::Tensor text_batch = text.to(device);
      at::Tensor mask =
          at::ones({1, text.size(1)}, at::TensorOptions().dtype(at::kBool))
              .to(device);
      if (cfg) {
        // One pass over [positive, negative]: pad the shorter caption.
        const int64_t length = std::max(text.size(1), negative.size(1));
        auto pad = [&](const at::Tensor& t) {
          return at::constant_pad_nd(t.to(device),
                                     {0, 0, 0, length - t.size(1)});
        };
        text_batch = at::cat({pad(text), pad(negative)}, 0);
        const at::Tensor lengths =
            at::tensor(std::vector<int64_t>{text.size(1), negative.size(1)},
                       at::TensorOptions().dtype(at::kLong));
        mask = (at::arange(length, at::TensorOptions().dtype(at::kLong))
                    .unsqueeze(0) < lengths.unsqueeze(1))
                   .to(device);
      }
      // A quantized model's weight buffer stays from step to step (its
      // pages faulted in once), freed when the steps end however they end.
      const mold::Module::KeepWeightBuffer kept(model);
      for (int i = 0; i < schedule.steps(); ++i) {
        const float delta = schedule.delta(i);
        // A step whose sigma does not change leaves the latents as they are
        // (x + 0 * v): skip the model.
        if (delta != 0.0f) {
          const float t = schedule.timesteps[i];
          mold::DenoiserInput input;
          input.latents = latents.to(dtype_);
          const int64_t passes = cfg ? 2 : 1;
          if (cfg) input.latents = input.latents.repeat({2, 1, 1, 1});
          input.timestep =
              at::full({passes}, (1000.0f - t) / 1000.0f,
                       at::TensorOptions().dtype(at::kFloat).device(device));
          input.text = text_batch;
          input.text_mask = mask;
          at::Tensor out = model.forward(input).to(at::kFloat);
          input = {};
          at::Tensor velocity;
          if (cfg) {
            at::Tensor pos = out.narrow(0, 0, 1), neg = out.narrow(0, 1, 1);
            velocity = pos + float(*r.guidance) * (pos - neg);
          } else {
            velocity = out;
          }
          out = at::Tensor();
          // The model predicts the negated velocity.
          latents = latents - delta * velocity;
        }
        scope.step(i + 1, schedule.steps());
      }
      latents = latents.to(at::kCPU);
    });

    return vae_decode(phases[next++], latents, context);
  }

 private:
  /// Z-Image's guidance is pos + g * (pos - neg): any g above 0 needs the
  /// negative prompt's pass (diffusers: do_classifier_free_guidance is
  /// guidance_scale > 0).
  static bool uses_cfg(const mold::GenerateRequest& r) {
    return *r.guidance > 0;
  }

  std::vector<std::int32_t> prompt_ids(const std::string& prompt) const {
    std::vector<std::int32_t> ids =
        tokenizer_->encode(mold::qwen3_chat_prompt(prompt));
    if (ids.size() > std::size_t(kMaxSequenceLength))
      ids.resize(kMaxSequenceLength);  // truncation=True, as the pipeline
    return ids;
  }

  /// The hidden states of the prompt's real tokens: (1, n, hidden), on the
  /// host in the run's dtype. The text encoder is causal and the pipeline
  /// pads on the right and keeps only the real tokens, so running the real
  /// tokens alone gives the same states without the padding's cost.
  at::Tensor encode(const mold::PlannedPhase& phase, const std::string& prompt,
                    mold::RunContext& context) {
    at::Tensor hidden;
    context.run_phase(phase, [&](mold::PhaseScope& scope) {
      auto& component = scope.component_as<mold::ModuleComponent>();
      const auto& encoder =
          dynamic_cast<const mold::TextEncoder&>(component.module());
      const std::vector<std::int32_t> ids = prompt_ids(prompt);
      std::vector<int64_t> wide(ids.begin(), ids.end());
      at::NoGradGuard no_grad;
      const c10::Device device = encoder.device();
      at::Tensor input = at::tensor(wide, at::TensorOptions().dtype(at::kLong))
                             .reshape({1, int64_t(wide.size())})
                             .to(device);
      at::Tensor mask = at::ones_like(input);
      hidden = encoder.encode(input, mask).to(at::kCPU);
      scope.set_detail(fmt::format("{} tokens", wide.size()));
    });
    return hidden;
  }

  static std::string kept_detail(const at::Tensor& hidden) {
    return fmt::format(
        "the embeddings of the last image with this prompt: {} "
        "tokens, {} on the host",
        hidden.size(1),
        mold::format_bytes(mold::Bytes(hidden.numel()) *
                           mold::Bytes(hidden.element_size())));
  }

  mold::EncodingMemo memo_;
  std::shared_ptr<const mold::BpeTokenizer> tokenizer_;
  mold::FlowMatchConfig scheduler_;
  TextEncoderDims text_dims_;
  TransformerDims transformer_dims_;
  std::shared_ptr<const ZImageEstimators> estimators_;
  int max_side_ = 16384;  ///< the transformer's RoPE positions allow no more
};

}  // namespace

std::unique_ptr<mold::Pipeline> make_zimage_pipeline(
    const PipelineFactories& factories, const mold::PipelineOptions& options) {
  return std::make_unique<ZImagePipeline>(factories, options);
}

}  // namespace zimage
