#include "mold/plugin/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "mold/base/build_config.hpp"
#include "mold/base/error.hpp"
#include "mold/base/text.hpp"
#include "mold/plugin/plugin.hpp"
#include "plugin/core_plugin.hpp"

namespace mold {

namespace {
constexpr const char* kCorePlugin = "core";

std::string join(const std::vector<std::string>& items) {
  return items.empty() ? "(none)" : join_names(items);
}
// After every entry of the same or a higher priority: ask order is priority,
// then registration order.
void insert_by_priority(std::vector<ClassifierEntry>& entries,
                        ClassifierEntry entry) {
  auto at = std::find_if(
      entries.begin(), entries.end(),
      [&](const ClassifierEntry& e) { return e.priority < entry.priority; });
  entries.insert(at, std::move(entry));
}

}  // namespace

Registry::Registry() {
  Registrar core(kCorePlugin, {});
  register_core_plugin(core);
  commit(std::move(core),
         PluginRecord{kCorePlugin, MOLD_VERSION, core_build_id(), {}, {}});
}

void Registry::commit(Registrar&& registrar, PluginRecord record) {
  // Check every key first, so that a collision registers nothing of this
  // plugin.
  auto owner_of_plugin = [&](const std::string& name) -> const PluginRecord* {
    for (const auto& p : plugins_)
      if (p.name == name) return &p;
    return nullptr;
  };
  if (const auto* other = owner_of_plugin(record.name))
    throw DuplicateRegistration(fmt::format(
        "a plugin named '{}' is already loaded from {}: remove one of the two "
        "copies from "
        "the plugin search path",
        record.name, other->path.empty() ? "the core" : other->path.string()));
  auto taken = [&](const std::string& what, const std::string& key,
                   const std::string& owner) {
    return DuplicateRegistration(
        fmt::format("{} '{}' is registered by both '{}' and '{}': uninstall or "
                    "rename one of them",
                    what, key, owner, record.name));
  };
  std::set<std::string> seen;
  auto check_unique_within = [&](const std::string& what,
                                 const std::string& key) {
    if (!seen.insert(what + " " + key).second)
      throw DuplicateRegistration(fmt::format(
          "plugin '{}' registers {} '{}' twice", record.name, what, key));
  };
  for (const auto& b : registrar.backends_) {
    check_unique_within("backend", b.name);
    if (auto it = backends_.find(b.name); it != backends_.end())
      throw taken("backend", b.name, it->second.plugin);
  }
  for (const auto& e : registrar.estimators_) {
    check_unique_within("estimator", e.key.to_string());
    if (auto it = estimators_.find(e.key); it != estimators_.end())
      throw taken("estimator", e.key.to_string(), it->second.plugin);
  }
  for (const auto& c : registrar.classifiers_) {
    check_unique_within("classifier", c.name);
    for (const auto& existing : classifiers_)
      if (existing.name == c.name)
        throw taken("classifier", c.name, existing.plugin);
  }
  for (const auto& f : registrar.families_) {
    check_unique_within("family", f.name);
    if (auto it = families_.find(f.name); it != families_.end())
      throw taken("family", f.name, it->second.plugin);
  }

  record.registered.clear();
  for (auto& b : registrar.backends_) {
    record.registered.push_back("backend " + b.name);
    backends_.emplace(b.name, BackendEntry{record.name, std::move(b.factory)});
  }
  for (auto& e : registrar.estimators_) {
    record.registered.push_back("estimator " + e.key.to_string());
    estimators_.emplace(e.key,
                        EstimatorEntry{record.name, std::move(e.estimator)});
  }
  for (auto& c : registrar.classifiers_) {
    record.registered.push_back("classifier " + c.name);
    insert_by_priority(classifiers_, {c.name, record.name,
                                      std::move(c.classifier), c.priority});
  }
  for (auto& f : registrar.families_) {
    record.registered.push_back("family " + f.name);
    const std::string name = f.name;
    families_.emplace(name, FamilyEntry{record.name, std::move(f)});
  }
  for (auto& h : registrar.hint_providers_) {
    record.registered.push_back("hints " + h.backend);
    hint_providers_.emplace(
        h.backend, HintProviderEntry{record.name, std::move(h.provider)});
  }
  plugins_.push_back(std::move(record));
}

void Registry::add_load_error(LoadError error) {
  load_errors_.push_back(std::move(error));
}

std::vector<std::string> Registry::backend_names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : backends_) names.push_back(name);
  return names;
}

std::shared_ptr<Backend> Registry::create_backend(
    const std::string& name) const {
  auto it = backends_.find(name);
  if (it == backends_.end())
    throw NotFound(
        fmt::format("no backend '{}' is registered; registered: {}. Is its "
                    "plugin in the plugin search path (molddiag plugins)?",
                    name, join(backend_names())));
  return it->second.factory();
}

std::vector<EstimatorKey> Registry::estimator_keys() const {
  std::vector<EstimatorKey> keys;
  for (const auto& [key, entry] : estimators_) keys.push_back(key);
  return keys;
}

const Estimator* Registry::find_estimator(const Workload& workload,
                                          EstimatorKey* matched) const {
  const EstimatorKey candidates[] = {
      {workload.family, workload.op, workload.backend},
      {workload.family, workload.op, "*"},
      {workload.family, "*", "*"},
  };
  for (const auto& key : candidates) {
    if (auto it = estimators_.find(key); it != estimators_.end()) {
      if (matched) *matched = key;
      return &it->second.estimator;
    }
  }
  return nullptr;
}

Estimate Registry::estimate(const Workload& workload) const {
  workload.validate();
  if (const Estimator* estimator = find_estimator(workload))
    return (*estimator)(workload);
  std::vector<std::string> for_family;
  for (const auto& [key, entry] : estimators_)
    if (key.family == workload.family) for_family.push_back(key.to_string());
  if (for_family.empty() && !families_.count(workload.family)) {
    std::vector<std::string> names;
    for (const auto& [name, entry] : families_) names.push_back(name);
    throw NotFound(fmt::format("no family '{}' is registered; registered: {}",
                               workload.family, join(names)));
  }
  throw NotFound(fmt::format(
      "no estimator for {}/{}/{}; registered for '{}': {}", workload.family,
      workload.op, workload.backend, workload.family, join(for_family)));
}

const ModelFamily* Registry::family(const std::string& name) const {
  auto it = families_.find(name);
  return it == families_.end() ? nullptr : &it->second.family;
}

std::vector<const ModelFamily*> Registry::families() const {
  std::vector<const ModelFamily*> out;
  for (const auto& [name, entry] : families_) out.push_back(&entry.family);
  return out;
}

OomClassifier Registry::classifier() const {
  return [this](const ErrorContext& error) { return classify(error); };
}

std::optional<OomReport> Registry::classify(const ErrorContext& error) const {
  for (const auto& entry : classifiers_) {
    std::optional<OomReport> report;
    try {
      report = entry.classify(error);
    } catch (...) {
      continue;  // a broken classifier must not hide the error it was given
    }
    if (report) {
      if (report->classifier.empty()) report->classifier = entry.name;
      return report;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Registry::backend_hints(
    const OomReport& report, const Workload* workload) const {
  std::vector<std::string> hints;
  const auto [first, last] = hint_providers_.equal_range(report.backend);
  for (auto it = first; it != last; ++it) {
    try {
      for (auto& hint : it->second.provider(report, workload))
        hints.push_back(std::move(hint));
    } catch (...) {
      continue;  // a broken provider must not hide the others' advice
    }
  }
  return hints;
}

bool Registry::has_backend_hints(const std::string& backend) const {
  return hint_providers_.count(backend) != 0;
}

}  // namespace mold
