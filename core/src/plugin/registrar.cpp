#include "mold/plugin/registrar.hpp"

#include <utility>

#include "mold/base/error.hpp"
#include "mold/plugin/plugin_loader.hpp"

namespace mold {

Registrar::Registrar(std::string plugin_name,
                     std::filesystem::path library_path,
                     std::filesystem::path user_data_dir)
    : plugin_name_(std::move(plugin_name)),
      library_path_(std::move(library_path)),
      user_data_dir_(std::move(user_data_dir)) {}

void Registrar::add_backend(const std::string& name, BackendFactory factory) {
  if (name.empty() || !factory)
    throw InvalidArgument("add_backend: a backend needs a name and a factory");
  backends_.push_back({name, std::move(factory)});
}

void Registrar::add_estimator(EstimatorKey key, Estimator estimator) {
  if (key.family.empty() || key.op.empty() || key.backend.empty() || !estimator)
    throw InvalidArgument(
        "add_estimator: '" + key.to_string() +
        "' needs a family, an op, a backend (or \"*\") and a function");
  estimators_.push_back({std::move(key), std::move(estimator)});
}

void Registrar::add_classifier(const std::string& name,
                               OomClassifier classifier, int priority) {
  if (name.empty() || !classifier)
    throw InvalidArgument(
        "add_classifier: a classifier needs a name and a function");
  classifiers_.push_back({name, std::move(classifier), priority});
}

void Registrar::add_family(ModelFamily family) {
  if (family.name.empty())
    throw InvalidArgument("add_family: the family needs a name");
  families_.push_back(std::move(family));
}

void Registrar::add_hint_provider(const std::string& backend,
                                  BackendHintProvider provider) {
  if (backend.empty() || !provider)
    throw InvalidArgument(
        "add_hint_provider: a hint provider needs a backend name and a "
        "function");
  hint_providers_.push_back({backend, std::move(provider)});
}

std::filesystem::path Registrar::data_file(const std::string& suffix) const {
  return library_path_.parent_path() / (plugin_name_ + "." + suffix);
}

std::filesystem::path Registrar::companion_file(const std::string& name) const {
  return library_path_.parent_path() / plugin_name_ /
         (name + plugin_library_extension());
}

std::filesystem::path Registrar::user_data_file(
    const std::string& suffix) const {
  if (user_data_dir_.empty()) return {};
  return user_data_dir_ / (plugin_name_ + "." + suffix);
}

}  // namespace mold
