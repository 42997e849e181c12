#include "common/family_lookup.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <mold/base/error.hpp>
#include <mold/catalog/arch_names.hpp>
#include <mold/catalog/model_dir.hpp>
#include <mold/catalog/model_search.hpp>

namespace mold::tools {

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
    const std::string& backend) {
  mold::PipelineOptions options;
  options.model = found.model->name;
  options.variant = found.variant->name;
  options.dtype = dtype;
  options.backend = backend;
  if (tiny) {
    options.arch = mold::ArchSpec::parse(mold::archs::kTiny);
    return options;
  }
  const std::vector<std::filesystem::path> flag_dirs(model_dirs.begin(),
                                                     model_dirs.end());
  const mold::ModelLookup lookup =
      mold::find_model_dir(found.model->name, flag_dirs, host.config);
  if (!lookup.found)
    throw mold::NotFound(mold::describe_lookup(lookup, found.model->name));
  // Validates model_index.json, and that it is this model's.
  mold::require_model_classes(mold::ModelDir::open(*lookup.found),
                              *found.model);
  options.model_dir = *lookup.found;
  return options;
}

PreparedRun prepare_run(const Host& host, const std::string& model_spec,
                        bool tiny, const std::vector<std::string>& model_dirs,
                        const std::string& dtype, const std::string& backend) {
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
  run.options =
      pipeline_options(host, run.found, tiny, model_dirs, chosen, backend);
  run.backend = host.registry->create_backend(backend);
  run.failure.registry = host.registry.get();
  run.failure.backend = run.backend->name();
  run.failure.device = run.backend->device_name();
  return run;
}

}  // namespace mold::tools
