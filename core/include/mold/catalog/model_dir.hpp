#pragma once
/// Model weights on disk: a diffusers-format model directory, and where mold
/// looks for one.
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
/// Where models live (model_search_dirs), in this order:
///   1. `--model-dir DIR` flags, in the order given;
///   2. `MOLD_MODELS_DIR`, a ':'-separated list (empty entries skipped);
///   3. `[models] dirs` in the config file (Config::model_dirs);
///   4. `$XDG_DATA_HOME/mold/models`, or `~/.local/share/mold/models`.
///
/// Matching (find_model_dir): the first search directory, in that order, that
/// yields a model directory (one with model_index.json) wins. Names compare
/// case-insensitively. A search directory D yields
///   a. D itself, when D is a model directory and it came from `--model-dir`
///      (any name), or its own folder name is the model's name;
///   b. else D/NAME, where NAME is the model's name ("z-image-turbo" finds
///      "Z-Image-Turbo");
///   c. else D/ORG--NAME for any organisation ("Tongyi-MAI--Z-Image-Turbo");
///   d. else a Hugging Face cache entry D/models--ORG--NAME (also under
///      D/hub/, so D may be ~/.cache/huggingface): the snapshot that
///      `refs/main` names, or else the newest snapshot (by modification time)
///      under `snapshots/` that has model_index.json.
/// A folder that is named like the model but has no model_index.json does not
/// match; it is reported in ModelLookup::near_misses.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mold {

class Config;

class ModelDir {
 public:
  /// Reads `root/model_index.json` and checks that every component it lists
  /// has its folder. Throws NotFound (the directory or model_index.json or a
  /// component folder is missing), InvalidArgument (`root` or a component is
  /// not a directory) or ConfigError (model_index.json malformed, an entry not
  /// a [library, class] pair, a component name that is no plain folder name),
  /// each naming the path and what to do.
  static ModelDir open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  /// `_class_name`: "ZImagePipeline".
  const std::string& pipeline_class() const { return pipeline_class_; }
  /// The present components (not those given as [null, null]), sorted.
  std::vector<std::string> components() const;
  bool has(const std::string& component) const;
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

/// `$XDG_DATA_HOME/mold/models`, or `$HOME/.local/share/mold/models`; empty
/// when neither variable is set.
std::filesystem::path default_models_dir();

/// The search directories in the order above. The first `from_flag.size()`
/// entries are `from_flag`, which find_model_dir needs to know.
std::vector<std::filesystem::path> model_search_dirs(
    const std::vector<std::filesystem::path>& from_flag, const Config& config);

struct ModelLookup {
  std::optional<std::filesystem::path> found;
  /// Every search directory looked in, in order (each once).
  std::vector<std::filesystem::path> looked_in;
  /// Folders named like the model that are no model directory, with why
  /// ("/m/z-image-turbo: no model_index.json").
  std::vector<std::string> near_misses;
};

/// Looks for `model_name` ("z-image-turbo") in `search_dirs` by the rules
/// above. The first `explicit_dirs` entries came from `--model-dir`: such a
/// directory matches as a model directory whatever its name. Never throws for
/// missing or unreadable directories (they are looked in and skipped).
ModelLookup find_model_dir(
    const std::string& model_name,
    const std::vector<std::filesystem::path>& search_dirs,
    std::size_t explicit_dirs = 0);

/// model_search_dirs + find_model_dir.
ModelLookup find_model_dir(const std::string& model_name,
                           const std::vector<std::filesystem::path>& from_flag,
                           const Config& config);

/// The message for a failed lookup: "no weights found for z-image-turbo",
/// where mold looked, the near misses, and how to point it at a directory
/// (`--model-dir DIR`, `MOLD_MODELS_DIR`, `[models] dirs`) or to run `--tiny`
/// with seeded weights. For a successful one, where the model was found.
std::string describe_lookup(const ModelLookup& lookup,
                            const std::string& model_name);

}  // namespace mold
