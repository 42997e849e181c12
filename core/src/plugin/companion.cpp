#include "mold/plugin/companion.hpp"

#include <fmt/format.h>

#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstring>
#include <utility>

#include "mold/base/error.hpp"
#include "mold/plugin/registrar.hpp"
#include "plugin/shared_library.hpp"

namespace mold {

namespace {

// The smallest descriptor of API version 1: every field up to make_factories.
constexpr std::size_t kCompanionInfoSizeV1 =
    offsetof(mold_companion_info, make_factories) +
    sizeof(void (*)(const void*, FamilyFactories&));

}  // namespace

Companion::Companion(const Registrar& registrar, const std::string& name,
                     std::shared_ptr<const void> context)
    : Companion(registrar.plugin_name(), registrar.companion_file(name),
                std::move(context)) {}

Companion::Companion(std::string plugin_name, std::filesystem::path library,
                     std::shared_ptr<const void> context)
    : plugin_name_(std::move(plugin_name)),
      library_(std::move(library)),
      context_(std::move(context)) {}

bool Companion::loaded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return factories_.has_value();
}

const FamilyFactories& Companion::factories() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (factories_) return *factories_;

  const std::string file = library_.string();
  const std::string reinstall = fmt::format(
      "reinstall mold (the plugin '{}' and its companion come from one build)",
      plugin_name_);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(library_, ec))
    throw Error(fmt::format(
        "the plugin '{}' computes with its companion library {}, which is "
        "missing: {}",
        plugin_name_, file, reinstall));

  auto library = std::make_unique<boost::dll::shared_library>();
  try {
    library->load(
        boost::dll::fs::path(file),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw Error(fmt::format(
        "cannot load {}, the companion of the plugin '{}': {}. Are its "
        "dependencies (libtorch) on the library path? Else {}",
        file, plugin_name_, dlopen_reason(e.what()), reinstall));
  }
  boost::dll::shared_library* opened = library.get();
  keep_loaded_forever(std::move(library));

  if (!opened->has(MOLD_COMPANION_ENTRY_SYMBOL))
    throw Error(
        fmt::format("{} has no '{}' symbol: it is not a mold "
                    "companion (one defines it with MOLD_COMPANION); {}",
                    file, MOLD_COMPANION_ENTRY_SYMBOL, reinstall));
  using EntryPoint = const mold_companion_info*();
  const mold_companion_info* info =
      opened->get<EntryPoint>(MOLD_COMPANION_ENTRY_SYMBOL)();
  if (!info)
    throw Error(fmt::format("{}: its '{}' returned no descriptor; {}", file,
                            MOLD_COMPANION_ENTRY_SYMBOL, reinstall));
  if (info->api_version != MOLD_PLUGIN_API_VERSION ||
      info->struct_size < kCompanionInfoSizeV1)
    throw Error(fmt::format(
        "{} was built for mold plugin API {} (descriptor of {} bytes); this "
        "mold has API {}: {}",
        file, info->api_version, info->struct_size, MOLD_PLUGIN_API_VERSION,
        reinstall));
  if (!info->build_id || std::strcmp(info->build_id, core_build_id()) != 0)
    throw Error(fmt::format("{} was built as '{}', this mold as '{}': {}", file,
                            info->build_id ? info->build_id : "(none)",
                            core_build_id(), reinstall));
  if (!info->plugin || plugin_name_ != info->plugin)
    throw Error(fmt::format(
        "{} is the companion of the plugin '{}', not of "
        "'{}': {}",
        file, info->plugin ? info->plugin : "(none)", plugin_name_, reinstall));
  if (!info->make_factories)
    throw Error(fmt::format("{}: its descriptor has no make_factories; {}",
                            file, reinstall));
  FamilyFactories made;
  info->make_factories(context_.get(), made);
  factories_ = std::move(made);
  return *factories_;
}

const FamilyFactories& companion_factories(Companion& companion) {
  return companion.factories();
}

}  // namespace mold
