#pragma once
/// A model family (Qwen-Image, Z-Image, ...): its models, their variants and
/// the byte size of each component, for planning what fits where.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/catalog/weight_layout.hpp"
#include "mold/estimate/arch_names.hpp"
#include "mold/oom/oom.hpp"

namespace mold {

class Vae;          // mold/model/vae.hpp
class TextEncoder;  // mold/model/text_encoder.hpp
class Denoiser;     // mold/model/denoiser.hpp
class Pipeline;     // mold/runtime/pipeline.hpp
class Companion;    // mold/plugin/companion.hpp

/// Which architecture a factory builds: a built-in ("default": the published
/// model; "tiny": small, for tests and CPU runs) or one described by a
/// `config.json` (diffusers' or transformers').
struct ArchSpec {
  std::string name = "default";  ///< "default", "tiny", or "config"
  std::filesystem::path config;  ///< the config.json when name is "config"

  /// "tiny", "default", or anything else as the path of a config.json.
  static ArchSpec parse(const std::string& text);
  static ArchSpec from_config(std::filesystem::path config);
  /// "tiny", "default", "config x/config.json".
  std::string describe() const;
};

/// Builds a family's VAE for an architecture ("default", "tiny"), weights from
/// `seed`. Throws InvalidArgument for an unknown architecture.
using VaeFactory = std::function<std::unique_ptr<Vae>(const std::string& arch,
                                                      std::uint64_t seed)>;

/// Build a component's architecture with its parameters declared (shapes
/// only): the caller seeds or loads them (mold/model/module.hpp). Throw
/// InvalidArgument for an unknown built-in, ConfigError for a bad config.
using TextEncoderFactory =
    std::function<std::unique_ptr<TextEncoder>(const ArchSpec& arch)>;
using DenoiserFactory =
    std::function<std::unique_ptr<Denoiser>(const ArchSpec& arch)>;

/// What a family needs to build the pipeline of one model.
struct PipelineOptions {
  std::string model;    ///< "z-image-turbo"
  std::string variant;  ///< "bf16"
  /// A diffusers-format model directory; none: seeded weights at `arch`.
  std::optional<std::filesystem::path> model_dir;
  /// The architecture when there is no directory ("tiny" or "default").
  ArchSpec arch;
  /// "float32", "float16" or "bfloat16": the weights' and activations'
  /// dtype.
  std::string dtype = "bfloat16";
  /// The backend it runs on ("cpu", "cuda"): the estimators' key.
  std::string backend = "cpu";
  /// The seed of seeded weights (each component derives its own from it).
  std::uint64_t weights_seed = 0;
  /// Checkpoint files given for single components ("transformer" ->
  /// z_image_turbo_bf16.safetensors, "vae", "text_encoder", and "mmproj":
  /// the vision tower's GGUF beside a llama.cpp text encoder): they replace
  /// the model directory's folder; the architecture still comes from the
  /// directory's config.json, or is the published one without a directory.
  std::map<std::string, std::filesystem::path> component_files;
  /// The family's layouts (ModelFamily::layouts): how each checkpoint is
  /// read.
  std::vector<WeightLayout> layouts;
};

/// Builds a model's pipeline. Throws NotFound for a model the family does not
/// have, ConfigError for a bad model directory.
using PipelineFactory =
    std::function<std::unique_ptr<Pipeline>(const PipelineOptions& options)>;

/// One loadable part of a model: "transformer", "text_encoder", "vae".
struct ComponentSize {
  std::string name;
  Bytes bytes = 0;  ///< bytes its weights take on a device
};

/// A precision or quantisation of a model: "bf16", "q8", "q4".
struct ModelVariant {
  std::string name;
  std::vector<ComponentSize> components;
  std::string source;  ///< where the sizes come from

  Bytes total_bytes() const;
  const ComponentSize* component(const std::string& name) const;
};

struct ModelInfo {
  std::string name;  ///< "qwen-image-edit-2511"
  std::string description;
  std::string default_variant;
  std::vector<ModelVariant> variants;
  /// The classes a model directory's model_index.json may name for this
  /// model: its `_class_name` (the pipeline: "QwenImageEditPlusPipeline")
  /// and, per component, its class ("vae": {"AutoencoderKLQwenImage"}).
  /// Empty: any. A directory of another pipeline is refused by name rather
  /// than run with this model's semantics.
  std::vector<std::string> pipeline_classes;
  std::vector<std::pair<std::string, std::vector<std::string>>>
      component_classes;

  const ModelVariant* variant(const std::string& name) const;
};

/// The files a family's tokenizer is read from (mold/model/tokenizer.hpp).
struct TokenizerFiles {
  std::filesystem::path tokenizer_json;    ///< tokenizer.json
  std::filesystem::path tokenizer_config;  ///< tokenizer_config.json
};

/// What a family's components are built by (any may be empty), and the
/// files of the tokenizer it ships.
struct FamilyFactories {
  VaeFactory vae;
  TextEncoderFactory text_encoder;
  DenoiserFactory transformer;
  PipelineFactory pipeline;
  /// The tokenizer's files the plugin ships (none: no tokenizer).
  std::optional<TokenizerFiles> tokenizer;
  /// The checkpoint layouts its components are read from
  /// (mold/catalog/weight_layout.hpp); torch-free, so molddiag inspects
  /// files with them without loading the companion.
  std::vector<WeightLayout> layouts;
  /// Set by a plugin whose factories are its companion's
  /// (mold/plugin/companion.hpp): then the four above are the companion's,
  /// loaded when the first of them is called, and are left empty here.
  std::shared_ptr<Companion> companion;
};

/// The factories of `companion`, loading it on the first call. Throws
/// mold::Error naming the library when it cannot be loaded.
const FamilyFactories& companion_factories(Companion& companion);

/// One factory of a family: a function, or the one of its companion's
/// factories (FamilyFactories::*member), which is loaded when it is first
/// called. Called as the function it stands for; it is true when it has a
/// function or a companion (a companion without that factory throws
/// mold::Error when called).
template <class Function> class FamilyFactory {
 public:
  FamilyFactory() = default;
  FamilyFactory(std::nullptr_t) {}  // NOLINT: as std::function
  /// A function (or lambda) as the factory.
  template <class Callable, class = std::enable_if_t<!std::is_same<
                                std::decay_t<Callable>, FamilyFactory>::value>>
  FamilyFactory(Callable callable)  // NOLINT: as std::function
      : function_(std::move(callable)) {}
  FamilyFactory(std::shared_ptr<Companion> companion,
                Function FamilyFactories::*member)
      : companion_(std::move(companion)), member_(member) {}

  explicit operator bool() const {
    return companion_ ? true : static_cast<bool>(function_);
  }
  /// The function it stands for (the companion's after loading it).
  const Function& function() const {
    return companion_ ? companion_factories(*companion_).*member_ : function_;
  }
  template <class... Args> auto operator()(Args&&... args) const {
    const Function& f = function();
    if (!f) throw_missing();
    return f(std::forward<Args>(args)...);
  }

 private:
  [[noreturn]] static void throw_missing();
  Function function_;
  std::shared_ptr<Companion> companion_;
  Function FamilyFactories::*member_ = nullptr;
};

/// "this build of the family has no such factory" (for FamilyFactory).
[[noreturn]] void throw_missing_factory();

template <class Function> void FamilyFactory<Function>::throw_missing() {
  throw_missing_factory();
}

struct ModelFamily {
  std::string name;  ///< "qwen_image"; also the estimator key's family
  std::string description;
  std::vector<ModelInfo> models;
  /// Family-specific advice for an OOM (may be empty).
  HintProvider hints;
  /// The family's VAE (empty when this build has none).
  FamilyFactory<VaeFactory> make_vae;
  /// Its text encoder and its denoiser (empty when it has none).
  FamilyFactory<TextEncoderFactory> make_text_encoder;
  FamilyFactory<DenoiserFactory> make_transformer;
  /// Its text-to-image pipeline (empty when this build has none).
  FamilyFactory<PipelineFactory> make_pipeline;
  /// The tokenizer the plugin ships (runs with seeded weights use it; a
  /// model directory brings its own), when it ships one.
  std::optional<TokenizerFiles> tokenizer;
  /// The layouts its components' checkpoints may come in.
  std::vector<WeightLayout> layouts;

  const ModelInfo* model(const std::string& name) const;
  /// Finds "qwen-image-edit-2511:q4" or "qwen-image-edit-2511" (default
  /// variant); nullopt-like nullptr pair when absent.
  std::pair<const ModelInfo*, const ModelVariant*> find(
      const std::string& spec) const;
};

/// "model:variant" specs of the same model whose components take fewer bytes
/// than those of `model_spec` ("qwen-image-edit-2511:q8" ->
/// {"qwen-image-edit-2511:q4"}), smallest last; empty when the spec is unknown
/// or already the smallest.
std::vector<std::string> smaller_variants(const ModelFamily& family,
                                          const std::string& model_spec);

/// "use a smaller variant: qwen-image:q8 (or qwen-image:q4)" from
/// smaller_variants(); empty when there is none. advise() adds it for every
/// family, so family plugins need not.
std::string smaller_variant_hint(const ModelFamily& family,
                                 const std::string& model_spec);

}  // namespace mold
