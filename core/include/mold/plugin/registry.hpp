#pragma once
/// The read side: everything the core and the plugins registered. Filled while
/// plugins load, read-only afterwards (reads take no locks).

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/catalog/model_family.hpp"
#include "mold/device/backend.hpp"
#include "mold/estimate/estimate.hpp"
#include "mold/oom/oom.hpp"
#include "mold/plugin/load_error.hpp"
#include "mold/plugin/registrar.hpp"

namespace mold {

/// A loaded plugin and what it registered ("estimator
/// qwen_image/vae_decode/cuda").
struct PluginRecord {
  std::string name;
  std::string version;
  std::string build_id;
  std::filesystem::path path;  ///< empty for what the core itself registers
  std::vector<std::string> registered;
};

/// A named classifier and the plugin that registered it.
struct ClassifierEntry {
  std::string name;
  std::string plugin;
  OomClassifier classify;
  int priority = kSpecificClassifier;
};

class Registry {
 public:
  /// A registry holding what the core registers itself, committed through a
  /// Registrar like any plugin's: the `cpu` backend, its hints, and the cpu,
  /// xpu and generic OOM classifiers.
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Moves what `registrar` collected into the registry. Throws
  /// DuplicateRegistration naming both plugins (and registers nothing) when a
  /// key is taken. The code behind the entries must stay loaded for the life
  /// of the process: the loader never unloads a plugin library.
  void commit(Registrar&& registrar, PluginRecord record);
  /// Notes a plugin that could not be loaded (the loader calls this).
  void add_load_error(LoadError error);

  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  const std::vector<LoadError>& load_errors() const { return load_errors_; }

  std::vector<std::string> backend_names() const;
  /// A new instance of the named backend. Throws NotFound listing the
  /// registered names, or whatever the factory throws when the device is
  /// absent.
  std::shared_ptr<Backend> create_backend(const std::string& name) const;

  std::vector<EstimatorKey> estimator_keys() const;
  /// The estimator for the workload's (family, op, backend), falling back to
  /// (family, op, *) and then (family, *, *); nullptr when none. `matched`
  /// receives the key that answered.
  const Estimator* find_estimator(const Workload& workload,
                                  EstimatorKey* matched = nullptr) const;
  /// Validates the workload and asks its estimator. Throws NotFound naming the
  /// key and what is registered for the family.
  Estimate estimate(const Workload& workload) const;

  const ModelFamily* family(const std::string& name) const;
  std::vector<const ModelFamily*> families() const;

  /// In the order classify() asks them.
  const std::vector<ClassifierEntry>& classifiers() const {
    return classifiers_;
  }
  /// The first classifier (plugins' in load order, then the core's generic
  /// fallback) that recognises the error; nullopt when none does. A classifier
  /// that throws is skipped.
  std::optional<OomReport> classify(const ErrorContext& error) const;
  /// classify() as a function, for RecoveryPolicy: it refers to this registry,
  /// which must outlive it.
  OomClassifier classifier() const;

  /// What the hint providers registered for `report.backend` advise, in
  /// registration order; a provider that throws is skipped. `workload` may be
  /// null.
  std::vector<std::string> backend_hints(const OomReport& report,
                                         const Workload* workload) const;
  /// Whether any hint provider is registered for `backend`.
  bool has_backend_hints(const std::string& backend) const;

 private:
  struct BackendEntry {
    std::string plugin;
    BackendFactory factory;
  };
  struct EstimatorEntry {
    std::string plugin;
    Estimator estimator;
  };
  struct FamilyEntry {
    std::string plugin;
    ModelFamily family;
  };
  struct HintProviderEntry {
    std::string plugin;
    BackendHintProvider provider;
  };

  std::vector<PluginRecord> plugins_;
  std::vector<LoadError> load_errors_;
  std::map<std::string, BackendEntry> backends_;
  std::map<EstimatorKey, EstimatorEntry> estimators_;
  std::map<std::string, FamilyEntry> families_;
  std::multimap<std::string, HintProviderEntry> hint_providers_;
  /// By priority, then registration order.
  std::vector<ClassifierEntry> classifiers_;
};

}  // namespace mold
