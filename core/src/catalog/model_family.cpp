#include "mold/catalog/model_family.hpp"

#include <algorithm>

#include "mold/base/error.hpp"

namespace mold {

void throw_missing_factory() {
  throw Error(
      "this build of the family has no such factory: the plugin registered "
      "none; run 'molddiag plugins' to see what it registered");
}

ArchSpec ArchSpec::parse(const std::string& text) {
  if (text == archs::kDefault || text == archs::kTiny) {
    ArchSpec spec;
    spec.name = text;
    return spec;
  }
  if (text.empty())
    throw InvalidArgument(
        "the architecture is empty; give 'default', 'tiny' or the path of a "
        "config.json");
  return from_config(text);
}

ArchSpec ArchSpec::from_config(std::filesystem::path config) {
  ArchSpec spec;
  spec.name = archs::kConfig;
  spec.config = std::move(config);
  return spec;
}

std::string ArchSpec::describe() const {
  return name == archs::kConfig ? "config " + config.string() : name;
}

Bytes ModelVariant::total_bytes() const {
  Bytes total = 0;
  for (const auto& c : components) total += c.bytes;
  return total;
}

const ComponentSize* ModelVariant::component(
    const std::string& component_name) const {
  for (const auto& c : components)
    if (c.name == component_name) return &c;
  return nullptr;
}

const ModelVariant* ModelInfo::variant(const std::string& variant_name) const {
  for (const auto& v : variants)
    if (v.name == variant_name) return &v;
  return nullptr;
}

const ModelInfo* ModelFamily::model(const std::string& model_name) const {
  for (const auto& m : models)
    if (m.name == model_name) return &m;
  return nullptr;
}

std::pair<const ModelInfo*, const ModelVariant*> ModelFamily::find(
    const std::string& spec) const {
  const auto colon = spec.find(':');
  const ModelInfo* info = model(spec.substr(0, colon));
  if (!info) return {nullptr, nullptr};
  const std::string variant_name = colon == std::string::npos
                                       ? info->default_variant
                                       : spec.substr(colon + 1);
  return {info, info->variant(variant_name)};
}

std::vector<std::string> smaller_variants(const ModelFamily& family,
                                          const std::string& model_spec) {
  const auto [info, current] = family.find(model_spec);
  if (!info || !current) return {};
  std::vector<const ModelVariant*> smaller;
  for (const auto& v : info->variants)
    if (v.total_bytes() < current->total_bytes()) smaller.push_back(&v);
  std::sort(smaller.begin(), smaller.end(),
            [](const ModelVariant* a, const ModelVariant* b) {
              return a->total_bytes() > b->total_bytes();
            });
  std::vector<std::string> specs;
  for (const auto* v : smaller) specs.push_back(info->name + ":" + v->name);
  return specs;
}

std::string smaller_variant_hint(const ModelFamily& family,
                                 const std::string& model_spec) {
  const auto smaller = smaller_variants(family, model_spec);
  if (smaller.empty()) return {};
  return "use a smaller variant: " + smaller.front() +
         (smaller.size() > 1 ? " (or " + smaller.back() + ")" : "");
}

}  // namespace mold
