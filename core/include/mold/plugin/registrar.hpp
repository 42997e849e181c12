#pragma once
/// The write side of the registry, handed to a plugin's register_all().

#include <filesystem>
#include <string>
#include <vector>

#include "mold/catalog/model_family.hpp"
#include "mold/device/backend.hpp"
#include "mold/estimate/estimate.hpp"
#include "mold/oom/oom.hpp"

namespace mold {

class Registry;

/// Collects what one plugin registers. Nothing reaches the registry until
/// register_all() returns without throwing and no key collides with one already
/// registered: a plugin is registered whole or not at all.
class Registrar {
 public:
  /// For the loader (and tests): a registrar for the plugin `plugin_name` whose
  /// library is `library_path` (empty for the core's own registrations),
  /// reading user overrides from `user_data_dir` (may be empty).
  Registrar(std::string plugin_name, std::filesystem::path library_path,
            std::filesystem::path user_data_dir = {});

  void add_backend(const std::string& name, BackendFactory factory);
  void add_estimator(EstimatorKey key, Estimator estimator);
  /// Adds a classifier, asked in `priority` order (kSpecificClassifier first).
  void add_classifier(const std::string& name, OomClassifier classifier,
                      int priority = kSpecificClassifier);
  void add_family(ModelFamily family);
  /// Adds advice for OOMs on `backend` ("cuda", "rocm", "mps", "cpu"); asked
  /// by advise() for every report of that backend, in registration order.
  void add_hint_provider(const std::string& backend,
                         BackendHintProvider provider);

  /// The plugin's name, as in its mold_plugin_info.
  const std::string& plugin_name() const { return plugin_name_; }
  /// The plugin library's path.
  const std::filesystem::path& library_path() const { return library_path_; }
  /// A data file shipped beside the library: `<library dir>/<plugin
  /// name>.<suffix>`, e.g. data_file("calibration.toml") ->
  /// ".../plugins/qwen_image.calibration.toml".
  std::filesystem::path data_file(const std::string& suffix) const;
  /// The user's override of that file, `<user data dir>/<plugin
  /// name>.<suffix>`, when the user data dir is set (it may not exist).
  std::filesystem::path user_data_file(const std::string& suffix) const;
  /// The plugin's companion library `name` (mold/plugin/companion.hpp):
  /// `<library dir>/<plugin name>/<name>.so`, e.g. companion_file("torch") ->
  /// ".../plugins/zimage/torch.so".
  std::filesystem::path companion_file(const std::string& name) const;

 private:
  friend class Registry;
  struct BackendEntry {
    std::string name;
    BackendFactory factory;
  };
  struct EstimatorEntry {
    EstimatorKey key;
    Estimator estimator;
  };
  struct ClassifierEntry {
    std::string name;
    OomClassifier classifier;
    int priority;
  };
  struct HintProviderEntry {
    std::string backend;
    BackendHintProvider provider;
  };

  std::string plugin_name_;
  std::filesystem::path library_path_;
  std::filesystem::path user_data_dir_;
  std::vector<BackendEntry> backends_;
  std::vector<EstimatorEntry> estimators_;
  std::vector<ClassifierEntry> classifiers_;
  std::vector<ModelFamily> families_;
  std::vector<HintProviderEntry> hint_providers_;
};

}  // namespace mold
