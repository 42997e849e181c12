#pragma once
/// A plugin's companion: the part of a family plugin that computes with
/// tensors (its models and pipelines), built as a library of its own and
/// loaded the first time one of its factories is called. Loading the plugin
/// itself (its models, estimators, OOM classifiers and hints) then never loads
/// libtorch, which costs a process about 0.7 s on Debian's build (2 s under
/// AddressSanitizer): `molddiag estimate`, `molddiag plugins`, a remote
/// `mold run` and every usage error stay light.
///
/// The companion lives beside its plugin, `<plugin dir>/<plugin
/// name>/<name>.so` (Registrar::companion_file), where the plugin scan, which
/// reads only the directory's own files, does not take it for a plugin. It
/// defines its entry with MOLD_COMPANION; the core checks it as it checks a
/// plugin's: the library loads, the symbol exists and returns non-null,
/// `api_version` and `struct_size` match, `build_id` equals the core's, and it
/// names the plugin that loads it. Any failure throws mold::Error naming the
/// library and what to do, from the factory that needed it; the plugin's
/// other registrations go on working. A companion is loaded once and never
/// unloaded, like a plugin.
///
/// Write the two halves as:
///
///     // plugin (torch-free):
///     auto companion = std::make_shared<mold::Companion>(
///         registrar, "torch", std::make_shared<const MyContext>(...));
///     mold::FamilyFactories factories;
///     factories.companion = companion;  // the family's factories are its
///     // companion (links mold::torch):
///     void make(const void* context, mold::FamilyFactories& out) { ... }
///     MOLD_COMPANION("my_family", make)

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mold/catalog/model_family.hpp"
#include "mold/plugin/plugin.hpp"

extern "C" {

/// Version 1 of the companion descriptor. Grows only by appending fields.
struct mold_companion_info {
  std::uint32_t api_version;  ///< MOLD_PLUGIN_API_VERSION it was built with
  std::uint32_t struct_size;  ///< sizeof(mold_companion_info) in its build
  const char* plugin;         ///< the name of the plugin it belongs to
  const char* build_id;       ///< MOLD_BUILD_ID of its build
  /// Fills the tensor factories from the plugin's context (a type the plugin
  /// and its companion share; the core never looks inside).
  void (*make_factories)(const void* context, mold::FamilyFactories& factories);
};

/// The name of the entry symbol, for the core.
#define MOLD_COMPANION_ENTRY_SYMBOL "mold_get_companion_info"
}

/// Defines the entry point of a companion. Use once, at namespace scope.
#define MOLD_COMPANION(PLUGIN, MAKE_FACTORIES)                                 \
  extern "C" MOLD_PLUGIN_EXPORT const mold_companion_info*                     \
  mold_get_companion_info() {                                                  \
    static const mold_companion_info info{MOLD_PLUGIN_API_VERSION,             \
                                          sizeof(mold_companion_info), PLUGIN, \
                                          MOLD_BUILD_ID, &MAKE_FACTORIES};     \
    return &info;                                                              \
  }

namespace mold {

class Registrar;

/// One plugin's companion, loaded on the first call of factories().
class Companion {
 public:
  /// The companion `name` of the plugin `registrar` registers
  /// (registrar.companion_file(name)); `context` is handed to its
  /// make_factories and kept alive as long as this object.
  Companion(const Registrar& registrar, const std::string& name,
            std::shared_ptr<const void> context);
  /// The same for a library at `library` of the plugin `plugin_name`.
  Companion(std::string plugin_name, std::filesystem::path library,
            std::shared_ptr<const void> context);
  Companion(const Companion&) = delete;
  Companion& operator=(const Companion&) = delete;

  /// Its factories: loads and checks the library on the first call (one
  /// thread loads, others wait). Throws mold::Error naming the library, why
  /// and what to do; a later call tries again.
  const FamilyFactories& factories();
  /// Whether factories() has loaded it.
  bool loaded() const;
  const std::filesystem::path& library() const { return library_; }

 private:
  std::string plugin_name_;
  std::filesystem::path library_;
  std::shared_ptr<const void> context_;
  mutable std::mutex mutex_;
  std::optional<FamilyFactories> factories_;
};

}  // namespace mold
