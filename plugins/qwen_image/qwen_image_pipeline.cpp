#include "qwen_image_pipeline.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/catalog/components.hpp>
#include <mold/config/json_config.hpp>
#include <mold/estimate/arch_names.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/scheduler.hpp>
#include <mold/model/tokenizer.hpp>
#include <mold/model/vae.hpp>
#include <mold/plan/family_limits.hpp>
#include <mold/plan/field_naming.hpp>
#include <mold/runtime/diffusion_pipeline.hpp>
#include <mold/runtime/encoding_memo.hpp>
#include <mold/runtime/module_component.hpp>
#include <optional>

#include "edit_images.hpp"
#include "edit_processor_config.hpp"
#include "qwen25vl_text_encoder.hpp"
#include "qwen_image_prompt.hpp"
#include "qwen_image_transformer.hpp"
#include "qwen_image_vae.hpp"

namespace qwen_image {

namespace fs = std::filesystem;
using mold::components::kTextEncoder;
using mold::components::kTransformer;
using mold::components::kVae;

namespace {

constexpr const char* kFamily = "qwen_image";
constexpr int kSizeMultiple = 16;  // vae_scale_factor * 2
constexpr int kLatentChannels = 16;
constexpr int kMaxSourceImages = 8;
constexpr int kMaxRequestSide = 16384;  // the request schema's largest side

class QwenImagePipeline final : public mold::DiffusionPipeline {
 public:
  QwenImagePipeline(const PipelineFactories& factories,
                    const mold::PipelineOptions& options)
      : DiffusionPipeline(kFamily, "Qwen-Image", options),
        edit_(is_edit_model(options.model)) {
    const bool seeded = this->seeded();
    std::shared_ptr<const mold::BpeTokenizer> tokenizer;
    areas_ = arch_ == mold::archs::kTiny ? EditAreas::tiny()
                                         : EditAreas::published();
    if (seeded) {
      tokenizer =
          std::make_shared<const mold::BpeTokenizer>(mold::BpeTokenizer::load(
              factories.tokenizer_json, factories.tokenizer_config));
    } else {
      const fs::path& dir = *options.model_dir;
      tokenizer = std::make_shared<const mold::BpeTokenizer>(
          mold::BpeTokenizer::load(dir / "tokenizer"));
      // The edit model's image processor: its keys checked against what
      // edit_images.cpp implements.
      const fs::path processor = dir / "processor" / "preprocessor_config.json";
      std::error_code ec;
      if (edit_ && fs::exists(processor, ec))
        check_edit_processor_config(processor);
      scheduler_ = mold::FlowMatchConfig::from_json(
          mold::JsonConfig::read(dir / "scheduler" / "scheduler_config.json"));
    }
    if (seeded) scheduler_ = published_scheduler();
    // The q4 and q8 variants quantize the transformer only (the published
    // GGUF files do): seeded weights as ggml's Q4_0 / Q8_0 blocks; a model
    // directory's transformer/ holds its GGUF file.
    mold::WeightSource transformer_source = weight_source(kTransformer, 2);
    transformer_source.quantize = seeded_quantization();
    std::unique_ptr<Qwen25VLTextEncoder> text_encoder =
        make_qwen25vl_text_encoder(arch_of(kTextEncoder), edit_);
    std::unique_ptr<mold::Denoiser> transformer =
        make_qwen_image_transformer(arch_of(kTransformer));
    // Edit-2511's published transformer config sets zero_cond_t (the
    // conditioning images' tokens take timestep 0); with no config.json (a
    // seeded run at the published architecture, or files alone) the edit
    // model runs with it, as its published directory does.
    if (edit_ && !options.model_dir && arch_ == mold::archs::kDefault)
      dynamic_cast<QwenImageTransformer&>(*transformer).set_zero_cond_t(true);
    encoder_config_ = text_encoder->config();
    prompt_.emplace(tokenizer, encoder_config_.image_token_id,
                    encoder_config_.vision.spatial_merge_size, edit_);
    text_dims_ = text_encoder_dims(encoder_config_);
    vision_dims_ = vision_dims(encoder_config_.vision);
    const auto& t =
        dynamic_cast<const QwenImageTransformer&>(*transformer).config();
    transformer_dims_ = transformer_dims(t);
    if (t.out_channels != kLatentChannels)
      throw mold::ConfigError(
          seeded ? fs::path("<built-in>")
                 : *options.model_dir / kTransformer / "config.json",
          0, "out_channels",
          fmt::format("is {}; the Qwen-Image VAE's latents have {} channels",
                      t.out_channels, kLatentChannels));
    if (t.joint_attention_dim != encoder_config_.hidden_size)
      throw mold::ConfigError(
          seeded ? fs::path("<built-in>")
                 : *options.model_dir / kTransformer / "config.json",
          0, "joint_attention_dim",
          fmt::format("is {} but the text encoder's hidden size is {}",
                      t.joint_attention_dim, encoder_config_.hidden_size));
    estimators_ = factories.estimators;
    QwenImageVaeConfig vae_config;
    if (seeded)
      vae_config.arch = options.arch.name;
    else
      vae_config =
          read_qwen_image_vae_config(*options.model_dir / kVae / "config.json");
    std::unique_ptr<mold::Vae> vae = declare_qwen_image_vae(vae_config);
    const bool zero_cond_t = t.zero_cond_t;
    declare_components(std::move(text_encoder), weight_source(kTextEncoder, 1),
                       std::move(transformer), std::move(transformer_source),
                       std::move(vae), weight_source(kVae, 3));
    // Edit-2511's single files mark zero_cond_t with a tensor; a config
    // that says otherwise would run the file with another model's math.
    if (const auto& mapping = transformer_->mapping())
      for (const auto& [key, value] : mapping->implies)
        if (key == "zero_cond_t" && value == "true" && !zero_cond_t) {
          if (!options.model_dir) {  // no config.json: the file says
            dynamic_cast<QwenImageTransformer&>(transformer_->module())
                .set_zero_cond_t(true);
            continue;
          }
          throw mold::ConfigError(
              *options.model_dir / kTransformer / "config.json", 0,
              "zero_cond_t",
              fmt::format("is false, but {} carries Qwen-Image-Edit-2511's "
                          "__index_timestep_zero__ marker (zero_cond_t "
                          "true): run it as qwen-image-edit-2511, or with "
                          "that model's directory",
                          transformer_->describe_source()));
        }
  }

  mold::GenerateRequest resolve(
      const mold::GenerateRequest& request) const override {
    mold::GenerateRequest r = request;
    const std::string images = mold::field_label("images", r.naming);
    if (edit_ && r.images.empty())
      throw mold::InvalidArgument(fmt::format(
          "{}: {} edits images: give at least one", images, options_.model));
    if (!edit_ && !r.images.empty())
      throw mold::InvalidArgument(
          fmt::format("{}: {} makes images from text and takes no source "
                      "image; use qwen-image-edit-2511 to edit one",
                      images, options_.model));
    if (r.images.size() > std::size_t(kMaxSourceImages))
      throw mold::InvalidArgument(
          fmt::format("{}: {} source images; {} takes at most {}", images,
                      r.images.size(), options_.model, kMaxSourceImages));
    for (std::size_t i = 0; i < r.images.size(); ++i) {
      const at::Tensor& image = r.images[i];
      if (!image.defined() || image.dim() != 3 || image.size(0) != 3 ||
          image.scalar_type() != at::kByte)
        throw mold::InvalidArgument(fmt::format(
            "{}: not 8-bit RGB (3 x H x W)",
            mold::field_label(fmt::format("images[{}]", i), r.naming)));
    }
    // An edit's size follows its last image at the VAE's area
    // (calculate_dimensions, then multiples of 16); text-to-image's is
    // square.
    int width = arch_ == mold::archs::kTiny ? 256 : 1024, height = width;
    if (edit_) {
      const at::Tensor& last = r.images.back();
      const mold::ImageSize size =
          fit_to_area(areas_.vae, int(last.size(2)), int(last.size(1)));
      width = size.width / kSizeMultiple * kSizeMultiple;
      height = size.height / kSizeMultiple * kSizeMultiple;
      // The size the user did not give follows the image: name the image,
      // not a flag that was never passed.
      const bool derived = r.width == 0 || r.height == 0;
      if (derived && (width < kSizeMultiple || height < kSizeMultiple ||
                      width > kMaxRequestSide || height > kMaxRequestSide))
        throw mold::InvalidArgument(fmt::format(
            "{} is {}x{}: an edit's size follows its last image at the same "
            "area, here {}x{}, outside Qwen-Image's {} to {} pixels a side; "
            "give {} and {}, or an image closer to square",
            mold::field_label(fmt::format("images[{}]", r.images.size() - 1),
                              r.naming),
            last.size(2), last.size(1), size.width, size.height, kSizeMultiple,
            kMaxRequestSide, mold::field_label("width", r.naming),
            mold::field_label("height", r.naming)));
    }
    if (r.width == 0) r.width = width;
    if (r.height == 0) r.height = height;
    if (r.steps == 0) r.steps = 50;     // both pipelines' default
    if (!r.guidance) r.guidance = 4.0;  // true_cfg_scale
    // The schedule is stretched to end at shift_terminal: one step has
    // nothing to stretch (its only sigma is 1).
    mold::check_family_limits(
        r, {"Qwen-Image", kSizeMultiple, kMaxRequestSide,
            scheduler_.shift_terminal ? 2 : 1,
            "its schedule ends at shift_terminal, which takes at least 2"});
    return r;
  }

  std::vector<mold::PlannedPhase> plan(
      const mold::GenerateRequest& r) const override {
    const Prepared prepared = prepare(r);
    return plan_of(r, prepared);
  }

  mold::GeneratedImage generate(const mold::GenerateRequest& r,
                                std::uint64_t seed,
                                mold::RunContext& context) override {
    const Prepared prepared = prepare(r);
    const std::vector<mold::PlannedPhase> phases = plan_of(r, prepared);
    const bool cfg = uses_cfg(r);
    std::size_t next = 0;

    // The conditioning (the prompts' embeddings, the source images'
    // latents), or what was kept from the last image with the same prompt,
    // negative prompt and source images (images 2..N of a batch; a server's
    // next request): kept as [text, negative, reference...].
    at::Tensor text, negative;
    std::vector<at::Tensor> references;
    const std::string key = mold::EncodingMemo::key_of(r, cfg);
    if (const auto* kept = memo_.find(key)) {
      const std::string detail = fmt::format(
          "kept from the last image with this prompt{}: {} on the host",
          edit_ ? " and these images" : "", mold::format_bytes(memo_.bytes()));
      if (edit_) context.reuse_phase(phases[next++], detail);
      text = (*kept)[0];
      context.reuse_phase(phases[next++], detail);
      if (cfg) {
        negative = (*kept)[1];
        context.reuse_phase(phases[next++], detail);
      }
      for (std::size_t i = 0; i < prepared.images.size(); ++i) {
        references.push_back((*kept)[2 + i]);
        context.reuse_phase(phases[next++], detail);
      }
    } else {
      at::Tensor features;  // the vision tower's, shared by both prompts
      if (edit_) features = vision_encode(phases[next++], prepared, context);
      text = encode(phases[next++], prepared.prompt_ids, prepared, features,
                    context);
      if (cfg)
        negative = encode(phases[next++], prepared.negative_ids, prepared,
                          features, context);
      features.reset();
      for (std::size_t i = 0; i < prepared.images.size(); ++i)
        references.push_back(
            vae_encode(phases[next++], prepared.images[i].vae_input, context));
      std::vector<at::Tensor> conditioning{text, negative};
      conditioning.insert(conditioning.end(), references.begin(),
                          references.end());
      memo_.keep(key, std::move(conditioning));
    }

    // Noise on the host from the seed, whatever the backend: the same seed
    // gives the same image everywhere (diffusers draws it, after the
    // encodes, from a CPU torch.Generator).
    const int64_t lh = 2 * (r.height / kSizeMultiple);
    const int64_t lw = 2 * (r.width / kSizeMultiple);
    at::Tensor latents =
        host_noise(seed, {1, kLatentChannels, lh, lw}).to(dtype_);

    const mold::PlannedPhase& denoise = phases[next++];
    context.run_phase(denoise, [&](mold::PhaseScope& scope) {
      auto& component = scope.component_as<mold::ModuleComponent>();
      const auto& model =
          dynamic_cast<const mold::Denoiser&>(component.module());
      const c10::Device device = model.device();
      const long image_tokens = long(lh / 2) * long(lw / 2);
      // The pipelines' sigmas, numpy's float64 linspace(1, 1/steps, steps),
      // through set_timesteps(sigmas=..., mu=...) in float32.
      std::vector<float> sigmas(std::size_t(r.steps));
      for (int i = 0; i < r.steps; ++i)
        sigmas[std::size_t(i)] =
            r.steps == 1
                ? 1.0f
                : float(1.0 + (1.0 / r.steps - 1.0) * i / (r.steps - 1));
      const mold::FlowMatchSchedule schedule =
          mold::flow_match_schedule_from_sigmas(
              scheduler_, sigmas,
              scheduler_.use_dynamic_shifting
                  ? std::optional<double>(
                        mold::flow_match_mu(scheduler_, image_tokens))
                  : std::nullopt);
      at::NoGradGuard no_grad;
      latents = latents.to(device);
      std::vector<at::Tensor> refs;
      for (const at::Tensor& ref : references)
        refs.push_back(ref.to(device, dtype_));
      const auto input_of = [&](const at::Tensor& hidden, float t) {
        mold::DenoiserInput input;
        input.latents = latents;
        input.references = refs;
        // The pipeline rounds t to its dtype, then divides by 1000 there.
        input.timestep = at::full({1}, t, at::TensorOptions().dtype(at::kFloat))
                             .to(dtype_)
                             .div(1000)
                             .to(device);
        input.text = hidden.to(device, dtype_);
        input.text_mask =
            at::ones({1, hidden.size(1)},
                     at::TensorOptions().dtype(at::kBool).device(device));
        return input;
      };
      // A quantized model's weight buffer stays from step to step (its
      // pages faulted in once), freed when the steps end however they end.
      const mold::Module::KeepWeightBuffer kept(model);
      for (int i = 0; i < schedule.steps(); ++i) {
        const float t = schedule.timesteps[i];
        at::Tensor velocity = model.forward(input_of(text, t));
        if (cfg) {
          const at::Tensor neg = model.forward(input_of(negative, t));
          // comb = neg + s (cond - neg), rescaled per token to the norm of
          // the positive prediction (over the 64 packed features).
          const at::Tensor cond = pack_latents(velocity),
                           uncond = pack_latents(neg);
          const at::Tensor comb = uncond + float(*r.guidance) * (cond - uncond);
          const at::Tensor cond_norm = at::norm(cond, 2, {-1}, true);
          const at::Tensor comb_norm = at::norm(comb, 2, {-1}, true);
          velocity = unpack_latents(comb * (cond_norm / comb_norm), lh, lw);
        }
        // The Euler step in float32, the latents back in the model's dtype.
        latents = (latents.to(at::kFloat) +
                   schedule.delta(i) * velocity.to(at::kFloat))
                      .to(dtype_);
        scope.step(i + 1, schedule.steps());
      }
      latents = latents.to(at::kCPU);
    });

    return vae_decode(phases[next++], latents, context);
  }

 private:
  /// What one request makes of its prompts and images before any phase.
  struct Prepared {
    std::vector<PreparedImage> images;
    std::vector<int64_t> prompt_ids, negative_ids;  // the whole template
  };

  /// FlowMatchEulerDiscreteScheduler as Qwen-Image's scheduler_config.json
  /// sets it: dynamic exponential shifting between 256 and 8192 tokens
  /// (shift 0.5 to 0.9), stretched to a last sigma of 0.02.
  static mold::FlowMatchConfig published_scheduler() {
    mold::FlowMatchConfig c;
    c.use_dynamic_shifting = true;
    c.base_shift = 0.5;
    c.max_shift = 0.9;
    c.base_image_seq_len = 256;
    c.max_image_seq_len = 8192;
    c.shift_terminal = 0.02;
    return c;
  }

  /// True CFG: a scale above 1 and a negative prompt, the empty one too
  /// (diffusers' true_cfg_scale > 1 and has_neg_prompt: negative_prompt is
  /// not None).
  static bool uses_cfg(const mold::GenerateRequest& r) {
    return *r.guidance > 1 && r.negative_prompt.has_value();
  }

  Prepared prepare(const mold::GenerateRequest& r) const {
    Prepared p;
    for (std::size_t i = 0; i < r.images.size(); ++i)
      p.images.push_back(
          prepare_edit_image(r.images[i], areas_, encoder_config_.vision, i));
    std::vector<PatchGrid> grids;
    for (const PreparedImage& image : p.images)
      grids.push_back({image.vision.grid_h, image.vision.grid_w});
    p.prompt_ids = prompt_->ids(r.prompt, grids);
    if (uses_cfg(r)) p.negative_ids = prompt_->ids(*r.negative_prompt, grids);
    return p;
  }

  mold::Workload workload(std::string_view op, const mold::GenerateRequest& r,
                          int tokens) const {
    return DiffusionPipeline::workload(op, r, 1, tokens);
  }

  std::vector<mold::PlannedPhase> plan_of(const mold::GenerateRequest& r,
                                          const Prepared& prepared) const {
    const bool cfg = uses_cfg(r);
    std::vector<mold::PlannedPhase> phases;
    auto planned = [&](mold::Workload w, const char* component, int steps) {
      mold::PlannedPhase phase;
      phase.phase = w.op;
      phase.component = component;
      phase.workload = std::move(w);
      phase.steps = steps;
      return phase;
    };
    std::vector<mold::ImageSize> vision_sizes, vae_sizes;
    for (const PreparedImage& image : prepared.images) {
      vision_sizes.push_back(image.vision_size);
      vae_sizes.push_back(image.vae_size);
    }
    if (edit_) {
      mold::Workload w = workload(kVisionEncode, r, 0);
      w.images = vision_sizes;
      phases.push_back(planned(std::move(w), kTextEncoder, 0));
    }
    for (const auto* ids : {&prepared.prompt_ids, &prepared.negative_ids}) {
      if (ids == &prepared.negative_ids && !cfg) break;
      mold::Workload w = workload(mold::ops::kTextEncode, r, int(ids->size()));
      w.images = vision_sizes;
      phases.push_back(planned(std::move(w), kTextEncoder, 0));
    }
    for (const mold::ImageSize& size : vae_sizes) {
      mold::Workload w = workload(mold::ops::kVaeEncode, r, 0);
      w.width = size.width;
      w.height = size.height;
      phases.push_back(planned(std::move(w), kVae, 0));
    }
    {
      mold::Workload w = workload(
          mold::ops::kDenoise, r,
          std::max(prompt_->kept_tokens(prepared.prompt_ids),
                   cfg ? prompt_->kept_tokens(prepared.negative_ids) : 0));
      w.images = vae_sizes;
      phases.push_back(planned(std::move(w), kTransformer, r.steps));
    }
    {
      mold::Workload w = workload(mold::ops::kVaeDecode, r, 0);
      phases.push_back(planned(w, kVae, 0));
    }
    // The registered estimators know the built-in architectures; a model
    // directory's is estimated here, from the sizes its config.json gave.
    if (options_.model_dir && estimators_) {
      for (auto& phase : phases) {
        if (phase.phase == mold::ops::kTextEncode)
          phase.estimate = estimators_->text_encode(phase.workload, text_dims_);
        if (phase.phase == kVisionEncode)
          phase.estimate =
              estimators_->vision_encode(phase.workload, vision_dims_);
        if (phase.phase == mold::ops::kDenoise)
          phase.estimate =
              estimators_->denoise(phase.workload, transformer_dims_);
      }
    }
    return phases;
  }

  at::Tensor vision_encode(const mold::PlannedPhase& phase,
                           const Prepared& prepared,
                           mold::RunContext& context) {
    at::Tensor features;
    context.run_phase(phase, [&](mold::PhaseScope& scope) {
      const auto& encoder = dynamic_cast<const Qwen25VLTextEncoder&>(
          scope.component_as<mold::ModuleComponent>().module());
      std::vector<VisionImage> images;
      int64_t patches = 0;
      for (const PreparedImage& image : prepared.images) {
        images.push_back(image.vision);
        patches += image.vision.pixel_values.size(0);
      }
      features = encoder.vision_features(images).to(at::kCPU);
      scope.set_detail(fmt::format("{} patches -> {} image tokens", patches,
                                   features.size(0)));
    });
    return features;
  }

  /// The hidden states the denoiser takes: (1, n, hidden) on the host in
  /// the run's dtype, the system turn's tokens dropped.
  at::Tensor encode(const mold::PlannedPhase& phase,
                    const std::vector<int64_t>& ids, const Prepared& prepared,
                    const at::Tensor& features, mold::RunContext& context) {
    at::Tensor hidden;
    context.run_phase(phase, [&](mold::PhaseScope& scope) {
      const auto& encoder = dynamic_cast<const Qwen25VLTextEncoder&>(
          scope.component_as<mold::ModuleComponent>().module());
      at::NoGradGuard no_grad;
      const at::Tensor input =
          at::tensor(ids, at::TensorOptions().dtype(at::kLong))
              .reshape({1, int64_t(ids.size())})
              .to(encoder.device());
      at::Tensor states;
      if (edit_) {
        std::vector<VisionImage> images;
        for (const PreparedImage& image : prepared.images)
          images.push_back(image.vision);
        states = encoder.encode_with_images(input, images, features);
      } else {
        states = encoder.encode(input, at::ones_like(input));
      }
      const int kept = prompt_->kept_tokens(ids);
      if (kept == 0)
        throw mold::InvalidArgument(
            "the prompt left no tokens after the template's system turn");
      hidden = states.narrow(1, prompt_->dropped(), kept).to(at::kCPU);
      scope.set_detail(
          fmt::format("{} tokens, {} after the template's", ids.size(), kept));
    });
    return hidden;
  }

  bool edit_;
  EditAreas areas_;
  mold::FlowMatchConfig scheduler_;
  Qwen25VLConfig encoder_config_;
  TextEncoderDims text_dims_;
  VisionDims vision_dims_;
  TransformerDims transformer_dims_;
  std::shared_ptr<const QwenImageEstimators> estimators_;
  mold::EncodingMemo memo_;
  std::optional<QwenPrompt> prompt_;
};

}  // namespace

bool is_edit_model(const std::string& model) {
  return model.rfind("qwen-image-edit", 0) == 0;
}

std::unique_ptr<mold::Pipeline> make_qwen_image_pipeline(
    const PipelineFactories& factories, const mold::PipelineOptions& options) {
  return std::make_unique<QwenImagePipeline>(factories, options);
}

}  // namespace qwen_image
