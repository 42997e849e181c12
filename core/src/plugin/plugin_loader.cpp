#include "mold/plugin/plugin_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/config/config.hpp"
#include "mold/plugin/plugin.hpp"
#include "mold/plugin/plugin_scanner.hpp"
#include "plugin/elf_inspection.hpp"
#include "plugin/shared_library.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

/// Plugin names are identifiers people type and see in messages and JSON.
bool valid_plugin_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (const unsigned char c : name)
    if (!std::isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

// The smallest descriptor of API version 1: every field up to register_all.
constexpr std::size_t kPluginInfoSizeV1 =
    offsetof(mold_plugin_info, register_all) + sizeof(void (*)(Registrar&));

}  // namespace

PluginLoader::PluginLoader(Registry& registry, fs::path user_data_dir,
                           PluginScanner* scanner)
    : registry_(registry),
      user_data_dir_(std::move(user_data_dir)),
      scanner_(scanner) {}

bool PluginLoader::load_file(const fs::path& path) {
  auto fail = [&](LoadErrorKind kind, std::string message) {
    registry_.add_load_error({path, kind, std::move(message)});
    return false;
  };

  // Read the file before running any of its code: a foreign library (another
  // program's .so, a library for another CPU) is refused here.
  const ElfInspection elf = inspect_elf(path, MOLD_PLUGIN_ENTRY_SYMBOL);
  if (elf.inspected) {
    if (!elf.is_elf)
      return fail(
          LoadErrorKind::not_loadable,
          fmt::format("cannot load {}: {}. A plugin is a shared "
                      "library built against the mold SDK",
                      path.string(),
                      elf.mismatch.empty() ? "it is not an ELF shared library"
                                           : elf.mismatch));
    if (!elf.mismatch.empty())
      return fail(LoadErrorKind::not_loadable,
                  fmt::format("cannot load {}: it is {}. Build the plugin for "
                              "this platform against this mold SDK",
                              path.string(), elf.mismatch));
    if (elf.defines_symbol && !*elf.defines_symbol)
      return fail(LoadErrorKind::missing_entry_symbol,
                  fmt::format("{} has no '{}' symbol: it is not a mold plugin "
                              "(a plugin defines it with MOLD_PLUGIN(name, "
                              "version, register_all)); it was not loaded",
                              path.string(), MOLD_PLUGIN_ENTRY_SYMBOL));
  }
  if (scanner_) {
    PluginScanVerdict verdict = scanner_->scan(path);
    if (!verdict.safe && verdict.error) {
      registry_.add_load_error(std::move(*verdict.error));
      return false;
    }
  }

  auto owned = std::make_unique<boost::dll::shared_library>();
  boost::dll::shared_library* library = owned.get();
  try {
    library->load(
        boost::dll::fs::path(path.string()),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return fail(
        LoadErrorKind::not_loadable,
        fmt::format("cannot load {}: {}. Is it a mold plugin built for this "
                    "platform, with its dependencies on the library path?",
                    path.string(), dlopen_reason(e.what())));
  }
  keep_loaded_forever(std::move(owned));

  if (!library->has(MOLD_PLUGIN_ENTRY_SYMBOL))
    return fail(
        LoadErrorKind::missing_entry_symbol,
        fmt::format("{} has no '{}' symbol: it is not a mold plugin (a plugin "
                    "defines it with MOLD_PLUGIN(name, version, register_all))",
                    path.string(), MOLD_PLUGIN_ENTRY_SYMBOL));

  using EntryPoint = const mold_plugin_info*();
  const mold_plugin_info* info = nullptr;
  try {
    info = library->get<EntryPoint>(MOLD_PLUGIN_ENTRY_SYMBOL)();
  } catch (const std::exception& e) {
    return fail(LoadErrorKind::entry_point_threw,
                fmt::format("{}: {}() threw: {}. The plugin is broken: "
                            "rebuild or remove it",
                            path.string(), MOLD_PLUGIN_ENTRY_SYMBOL, e.what()));
  } catch (...) {
    return fail(LoadErrorKind::entry_point_threw,
                fmt::format("{}: {}() threw a non-standard exception. The "
                            "plugin is broken: rebuild or remove it",
                            path.string(), MOLD_PLUGIN_ENTRY_SYMBOL));
  }
  if (info == nullptr)
    return fail(
        LoadErrorKind::null_info,
        fmt::format("{}: {}() returned null: the plugin gave no descriptor",
                    path.string(), MOLD_PLUGIN_ENTRY_SYMBOL));

  // api_version first: until it matches, no other field's layout can be
  // trusted.
  if (info->api_version != MOLD_PLUGIN_API_VERSION)
    return fail(
        LoadErrorKind::api_version_mismatch,
        fmt::format("{}: plugin API version mismatch: got {}, supported {}. "
                    "Rebuild the plugin against this mold SDK (" MOLD_VERSION
                    ")",
                    path.string(), info->api_version, MOLD_PLUGIN_API_VERSION));
  if (info->struct_size < kPluginInfoSizeV1)
    return fail(
        LoadErrorKind::struct_too_small,
        fmt::format(
            "{}: plugin descriptor is {} bytes, API version {} needs at "
            "least {}: the plugin was built with a damaged SDK header",
            path.string(), info->struct_size, MOLD_PLUGIN_API_VERSION,
            kPluginInfoSizeV1));

  const std::string name = info->name ? info->name : "";
  const std::string version = info->version ? info->version : "";
  const std::string build_id = info->build_id ? info->build_id : "";
  if (!valid_plugin_name(name))
    return fail(
        LoadErrorKind::invalid_name,
        name.empty()
            ? fmt::format("{}: the plugin descriptor has no name: "
                          "give MOLD_PLUGIN a name",
                          path.string())
            : fmt::format("{}: the plugin name '{}' has characters "
                          "other than letters, digits, '_', '.' and "
                          "'-': rename it in MOLD_PLUGIN",
                          path.string(), escape_control(name.substr(0, 128))));
  if (build_id != core_build_id())
    return fail(
        LoadErrorKind::build_id_mismatch,
        fmt::format(
            "{}: plugin '{}' was built as \"{}\" but this mold is \"{}\": "
            "C++ objects cannot cross between them. Rebuild the plugin "
            "against this mold SDK",
            path.string(), name, build_id, core_build_id()));
  if (info->register_all == nullptr)
    return fail(LoadErrorKind::null_register_all,
                fmt::format("{}: plugin '{}' has no register_all function",
                            path.string(), name));

  Registrar registrar(name, path, user_data_dir_);
  try {
    info->register_all(registrar);
  } catch (const std::exception& e) {
    return fail(LoadErrorKind::register_threw,
                fmt::format("{}: plugin '{}' failed to register: {}",
                            path.string(), name, e.what()));
  } catch (...) {
    return fail(
        LoadErrorKind::register_threw,
        fmt::format(
            "{}: plugin '{}' failed to register: it threw a non-standard "
            "exception",
            path.string(), name));
  }

  try {
    registry_.commit(std::move(registrar),
                     PluginRecord{name, version, build_id, path, {}});
  } catch (const DuplicateRegistration& e) {
    return fail(LoadErrorKind::duplicate,
                fmt::format("{}: {}", path.string(), e.what()));
  }
  return true;
}

void PluginLoader::load_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    const std::string type = describe_file_type(dir);
    registry_.add_load_error(
        {dir, LoadErrorKind::missing_directory,
         type == "missing"
             ? fmt::format("plugin directory {} does not exist: fix "
                           "--plugin-dir, MOLD_PLUGIN_PATH or [plugins] dirs "
                           "in the config",
                           dir.string())
             : fmt::format("plugin directory {} is {}, not a directory: give "
                           "the directory that holds the plugin (--plugin-dir, "
                           "MOLD_PLUGIN_PATH or [plugins] dirs)",
                           dir.string(), type)});
    return;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == plugin_library_extension() &&
        !fs::is_directory(entry.path(), ec))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) load_file(file);
}

void PluginLoader::load_directories(const std::vector<fs::path>& dirs) {
  std::set<fs::path> seen;
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(dir, ec);
    if (ec) key = dir;
    if (seen.insert(key).second) load_directory(dir);
  }
}

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& flag_dirs,
                                         const Config& config) {
  std::vector<fs::path> dirs = flag_dirs;
  if (const char* env = std::getenv("MOLD_PLUGIN_PATH")) {
    std::string list = env;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t colon = std::min(list.find(':', start), list.size());
      if (colon > start) dirs.emplace_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  dirs.insert(dirs.end(), config.plugin_dirs.begin(), config.plugin_dirs.end());
  dirs.push_back(installed_plugin_dir());
  return dirs;
}

fs::path installed_plugin_dir() {
  const fs::path core = boost::dll::this_line_location().string();
  return core.parent_path() / "mold" / "plugins";
}

std::string plugin_library_extension() {
#if defined(__APPLE__)
  return ".dylib";
#elif defined(_WIN32)
  return ".dll";
#else
  return ".so";
#endif
}

const char* core_build_id() { return MOLD_BUILD_ID; }

}  // namespace mold
