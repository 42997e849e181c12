#pragma once
/// Model weights on disk: a diffusers-format model directory.
///
/// A model directory (what `huggingface-cli download Tongyi-MAI/Z-Image-Turbo`
/// fetches) has `model_index.json` at its root,
///
///     {"_class_name": "ZImagePipeline", "_diffusers_version": "0.36.0",
///      "transformer": ["diffusers", "ZImageTransformer2DModel"],
///      "text_encoder": ["transformers", "Qwen3Model"],
///      "tokenizer": ["transformers", "Qwen2Tokenizer"],
///      "vae": ["diffusers", "AutoencoderKL"],
///      "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"]}
///
/// and one folder per component named by its key: `transformer/config.json`
/// with `*.safetensors` weights (or shards listed by
/// `*.safetensors.index.json`), `scheduler/scheduler_config.json`,
/// `tokenizer/tokenizer.json` + `tokenizer_config.json`. Keys starting with
/// `_` are metadata; a component given as `[null, null]` is absent (diffusers'
/// optional components); a boolean or number is a pipeline option and no
/// component.
///
/// Where mold looks for one: mold/catalog/model_search.hpp.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

// Until 0.2: the search moved to its own header; this one included it.
#include "mold/catalog/model_family.hpp"
#include "mold/catalog/model_search.hpp"

namespace mold {

class ModelDir {
 public:
  /// The file that makes a folder a diffusers model directory.
  static constexpr const char* kIndexFile = "model_index.json";

  /// Reads `root/model_index.json` and checks that every component it lists
  /// has its folder. Throws NotFound (the directory or model_index.json or a
  /// component folder is missing), InvalidArgument (`root` or a component is
  /// not a directory) or ConfigError (model_index.json malformed, an entry not
  /// a [library, class] pair, a component name that is no plain folder name),
  /// each naming the path and what to do.
  static ModelDir open(const std::filesystem::path& root);
  /// Whether `path` has a model_index.json (a regular file) at its root.
  static bool is_model_dir(const std::filesystem::path& path);

  const std::filesystem::path& root() const { return root_; }
  /// `_class_name`: "ZImagePipeline".
  const std::string& pipeline_class() const { return pipeline_class_; }
  /// The present components (not those given as [null, null]), sorted.
  std::vector<std::string> components() const;
  bool has(const std::string& component) const;
  /// Whether the index gives `component` as [null, null].
  bool is_absent(const std::string& component) const;
  /// "diffusers" or "transformers". NotFound unless has(component).
  std::string component_library(const std::string& component) const;
  /// "ZImageTransformer2DModel". NotFound unless has(component).
  std::string component_class(const std::string& component) const;
  /// root()/component. NotFound unless has(component).
  std::filesystem::path component_dir(const std::string& component) const;
  /// The component's configuration file: `scheduler_config.json` for a
  /// scheduler (class ending in "Scheduler"), `tokenizer_config.json` for a
  /// tokenizer (class containing "Tokenizer"), `preprocessor_config.json` for
  /// an image processor or feature extractor, `config.json` otherwise. NotFound
  /// naming the file when it is missing.
  std::filesystem::path config_path(const std::string& component) const;
  /// Where the component's weights are, for WeightSet::open: the
  /// `*.safetensors.index.json` when there is one, else the single
  /// `*.safetensors` file, else the folder (several unindexed shards). NotFound
  /// when the folder has no safetensors file (naming a `.bin` checkpoint if
  /// one is there: mold reads safetensors only).
  std::filesystem::path weights_path(const std::string& component) const;

 private:
  struct Component {
    std::string name;
    std::string library;
    std::string class_name;
  };
  const Component& component(const std::string& name) const;

  std::filesystem::path root_;
  std::string pipeline_class_;
  std::vector<Component> components_;  // sorted by name
  std::vector<std::string> absent_;    // listed as [null, null]
};

/// Throws ConfigError naming model_index.json and the key when `dir` names a
/// pipeline or component class `model` does not list (ModelInfo's
/// pipeline_classes, component_classes): a Qwen-Image-Edit directory given
/// for qwen-image-edit-2511 would run with the other pipeline's prompt and
/// images, a FLUX directory with Z-Image's. A component `model` needs that
/// the index leaves out, gives as [null, null] or as no [library, class]
/// pair is refused the same way, unless it is in `given` (a file given for
/// it: --transformer).
void require_model_classes(const ModelDir& dir, const ModelInfo& model,
                           const std::set<std::string>& given = {});

}  // namespace mold
