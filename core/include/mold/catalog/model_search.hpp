#pragma once
/// Where mold looks for a model's weights: the search directories and the
/// matching rules that find a diffusers-format model directory
/// (mold/catalog/model_dir.hpp) in them, and the message when none matches.
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
