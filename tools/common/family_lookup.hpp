#pragma once
/// Finding a model family by name for a command, with the message every tool
/// gives when it is not there.

#include <filesystem>
#include <map>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/device/backend.hpp>
#include <mold/plugin/registry.hpp>
#include <string>
#include <vector>

#include "common/host.hpp"
#include "common/readable_error.hpp"

namespace mold::tools {

/// The registered family `name`. Throws mold::NotFound naming it and listing
/// the registered families (or saying there are none: no plugin loaded).
const mold::ModelFamily& require_family(const mold::Registry& registry,
                                        const std::string& name);

/// "qwen_image, zimage", or "(none)".
std::string registered_family_names(const mold::Registry& registry);

/// The family that has a model, the model and the variant.
struct FoundModel {
  const mold::ModelFamily* family = nullptr;
  const mold::ModelInfo* model = nullptr;
  const mold::ModelVariant* variant = nullptr;
};

/// The model `spec` names ("z-image-turbo", "z-image-turbo:bf16"). Throws
/// InvalidArgument naming the spec and what the loaded plugins know (or, for
/// an unknown variant, the model's variants).
FoundModel find_model(const mold::Registry& registry, const std::string& spec);

/// How to build the found model's pipeline: seeded weights at the tiny
/// architecture with `tiny`, otherwise the model directory found by name in
/// `model_dirs` (the --model-dir flags), MOLD_MODELS_DIR, the config's
/// [models] dirs and the user's data dir. Throws NotFound saying where it
/// looked and how to point at a directory.
///
/// `files` gives single components' checkpoints ("transformer", "vae",
/// "text_encoder", "mmproj": --transformer and the like); they replace the
/// directory's folders, and with all three no directory is needed (the
/// published architecture, the tokenizer the plugin ships). A file that does
/// not exist is NotFound naming the flag; --mmproj without --text-encoder is
/// InvalidArgument.
using ComponentFiles = std::map<std::string, std::filesystem::path>;
/// "text-encoder" for "text_encoder": the flag that gives a component's file.
std::string component_flag(const std::string& component);
mold::PipelineOptions pipeline_options(
    const Host& host, const FoundModel& found, bool tiny,
    const std::vector<std::string>& model_dirs, const std::string& dtype,
    const std::string& backend, const ComponentFiles& files = {});

/// What running a model needs, found and checked the same way by every
/// command that runs one (mold run, molddiag leak and parity): the model, its
/// pipeline options, the backend, and the context that makes its errors
/// readable.
struct PreparedRun {
  FoundModel found;
  mold::PipelineOptions options;
  std::shared_ptr<mold::Backend> backend;
  FailureContext failure;
};

/// Finds `model_spec` and its weights (as find_model and pipeline_options,
/// which throw), refuses a model whose plugin has no pipeline (mold::Error),
/// and creates `backend`. An empty `dtype` is float32 with `tiny`, else
/// bfloat16.
PreparedRun prepare_run(const Host& host, const std::string& model_spec,
                        bool tiny, const std::vector<std::string>& model_dirs,
                        const std::string& dtype, const std::string& backend,
                        const ComponentFiles& files = {});

}  // namespace mold::tools
