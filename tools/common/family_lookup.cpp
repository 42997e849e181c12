#include "common/family_lookup.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <mold/base/error.hpp>
#include <mold/catalog/comfy_model_folder.hpp>
#include <mold/catalog/components.hpp>
#include <mold/catalog/model_dir.hpp>
#include <mold/catalog/model_search.hpp>
#include <mold/estimate/arch_names.hpp>

namespace mold::tools {

std::string component_flag(const std::string& component) {
  std::string flag = component;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string registered_family_names(const mold::Registry& registry) {
  std::string names;
  for (const auto* family : registry.families())
    names += (names.empty() ? "" : ", ") + family->name;
  return names.empty() ? "(none)" : names;
}

const mold::ModelFamily& require_family(const mold::Registry& registry,
                                        const std::string& name) {
  if (const mold::ModelFamily* family = registry.family(name)) return *family;
  throw mold::NotFound(
      fmt::format("no family '{}' is registered; registered: {}", name,
                  registered_family_names(registry)));
}

FoundModel find_model(const mold::Registry& registry, const std::string& spec) {
  std::string known;
  for (const mold::ModelFamily* family : registry.families()) {
    auto [model, variant] = family->find(spec);
    if (model && variant) return {family, model, variant};
    if (model && !variant) {
      std::string variants;
      for (const auto& v : model->variants)
        variants += (variants.empty() ? "" : ", ") + model->name + ":" + v.name;
      throw mold::InvalidArgument(
          fmt::format("model '{}': {} has no such variant; it has {}", spec,
                      model->name, variants));
    }
    for (const auto& m : family->models)
      known += (known.empty() ? "" : ", ") + m.name;
  }
  throw mold::InvalidArgument(fmt::format(
      "model '{}' is not one the loaded plugins know; they know: {} (see "
      "`molddiag plugins`)",
      spec, known.empty() ? "none" : known));
}

mold::PipelineOptions pipeline_options(
    const Host& host, const FoundModel& found, bool tiny,
    const std::vector<std::string>& model_dirs, const std::string& dtype,
    const std::string& backend, const ComponentFiles& files) {
  mold::PipelineOptions options;
  options.model = found.model->name;
  options.variant = found.variant->name;
  options.dtype = dtype;
  options.backend = backend;
  options.layouts = found.family->layouts;
  options.component_files = files;
  // The config's files for this model, where no flag gave one.
  std::map<std::string, std::string> given_by;
  for (const auto& [component, file] : files)
    given_by[component] = "--" + component_flag(component);
  const auto configured = host.config.model_files.find(found.model->name);
  if (configured != host.config.model_files.end())
    for (const auto& [component, file] : configured->second)
      if (options.component_files.emplace(component, file).second)
        given_by[component] =
            fmt::format("{}: models.\"{}\".{} =", host.config.source.string(),
                        found.model->name, component);
  for (const auto& [component, file] : options.component_files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
      throw mold::NotFound(fmt::format(
          "{} {}: no such file; give the path of the component's checkpoint "
          "(.safetensors or .gguf)",
          given_by.at(component), file.string()));
  }
  if (options.component_files.count("mmproj") &&
      !options.component_files.count(mold::components::kTextEncoder))
    throw mold::InvalidArgument(fmt::format(
        "{} {}: an mmproj is the vision tower of a llama.cpp text encoder; "
        "give the language model's GGUF too (--text-encoder, or text_encoder "
        "in the config)",
        given_by.at("mmproj"), options.component_files.at("mmproj").string()));
  auto missing_components = [&] {
    std::vector<std::string> missing;
    for (const char* component :
         {mold::components::kTransformer, mold::components::kVae,
          mold::components::kTextEncoder})
      if (!options.component_files.count(component))
        missing.push_back(component);
    return missing;
  };
  if (tiny) {
    options.arch = mold::ArchSpec::parse(mold::archs::kTiny);
    return options;
  }
  const std::vector<std::filesystem::path> flag_dirs(model_dirs.begin(),
                                                     model_dirs.end());
  const mold::ModelLookup lookup =
      mold::find_model_dir(found.model->name, flag_dirs, host.config);
  if (!lookup.found) {
    // ComfyUI models/ folders among the search directories: the components
    // not given by a flag, found by their content.
    std::string searched;
    for (const auto& dir : lookup.looked_in) {
      if (missing_components().empty() || !mold::is_comfy_model_folder(dir))
        continue;
      searched += (searched.empty() ? "" : ", ") + dir.string();
      for (auto& [component, file] : mold::find_component_files(
               dir, options.layouts, missing_components(), found.model->name))
        options.component_files.emplace(component, file);
    }
    std::string missing;
    for (const auto& component : missing_components())
      missing += (missing.empty() ? "--" : ", --") + component_flag(component);
    if (missing.empty()) {  // every component from a file
      options.arch = mold::ArchSpec::parse(mold::archs::kDefault);
      return options;
    }
    if (!searched.empty())
      missing += fmt::format(
          "; not found by content in the ComfyUI folder{} {}",
          searched.find(", ") == std::string::npos ? "" : "s", searched);
    throw mold::NotFound(
        fmt::format("{}; or give every component as a file (missing: {})",
                    mold::describe_lookup(lookup, found.model->name), missing));
  }
  // Validates model_index.json, and that it is this model's.
  std::set<std::string> given;
  for (const auto& [component, file] : options.component_files)
    given.insert(component);
  mold::require_model_classes(mold::ModelDir::open(*lookup.found), *found.model,
                              given);
  options.model_dir = *lookup.found;
  return options;
}

PreparedRun prepare_run(const Host& host, const std::string& model_spec,
                        bool tiny, const std::vector<std::string>& model_dirs,
                        const std::string& dtype, const std::string& backend,
                        const ComponentFiles& files) {
  PreparedRun run;
  run.found = find_model(*host.registry, model_spec);
  if (!run.found.family->make_pipeline)
    throw mold::Error(fmt::format(
        "model {}: the {} plugin in this build cannot run it (it has no "
        "pipeline)",
        run.found.model->name, run.found.family->name));
  const std::string chosen = !dtype.empty() ? dtype
                             : tiny         ? "float32"
                                            : "bfloat16";
  run.options = pipeline_options(host, run.found, tiny, model_dirs, chosen,
                                 backend, files);
  run.backend = host.registry->create_backend(backend);
  run.failure.registry = host.registry.get();
  run.failure.backend = run.backend->name();
  run.failure.device = run.backend->device_name();
  return run;
}

}  // namespace mold::tools
