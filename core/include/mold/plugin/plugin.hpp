#pragma once
/// The plugin ABI: one C entry point carrying a C++ payload.
///
/// A plugin is a shared library exporting `mold_get_plugin_info()`. The core
/// checks, in order: the library loads; the symbol exists; it returns non-null;
/// `api_version` is MOLD_PLUGIN_API_VERSION; `struct_size` covers every field
/// of this version; `build_id` equals the core's (same C++ standard library ABI
/// and libtorch version); `register_all` is set; it does not throw; nothing it
/// registers is already registered. Any failure skips the plugin with a
/// LoadError; the process never crashes.
///
/// Write a plugin as:
///
///     #include <mold/plugin/plugin.hpp>
///     static void register_all(mold::Registrar& r) { ... }
///     MOLD_PLUGIN("my_family", "0.1.0", register_all)

#include <cstdint>

#include "mold/base/build_config.hpp"
#include "mold/plugin/registrar.hpp"

/// Bump on any change to mold_plugin_info or to a registered interface.
#define MOLD_PLUGIN_API_VERSION 1

#define MOLD_DETAIL_STRINGIFY_(x) #x
#define MOLD_DETAIL_STRINGIFY(x) MOLD_DETAIL_STRINGIFY_(x)

#if defined(_LIBCPP_VERSION)
#  define MOLD_DETAIL_STDLIB_ID \
    "libc++ " MOLD_DETAIL_STRINGIFY(_LIBCPP_ABI_VERSION)
#elif defined(__GLIBCXX__)
#  define MOLD_DETAIL_STDLIB_ID \
    "libstdc++ cxx11abi=" MOLD_DETAIL_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_MSC_VER)
#  define MOLD_DETAIL_STDLIB_ID "msvc " MOLD_DETAIL_STRINGIFY(_MSC_VER)
#else
#  define MOLD_DETAIL_STDLIB_ID "unknown stdlib"
#endif

/// What must match between the core and a plugin for C++ objects to cross
/// between them: the plugin API, the standard library and its ABI, and the
/// libtorch version (tensors cross the boundary). Evaluated in the translation
/// unit that expands it.
#define MOLD_BUILD_ID                                     \
  "mold-api " MOLD_DETAIL_STRINGIFY(                      \
      MOLD_PLUGIN_API_VERSION) "; " MOLD_DETAIL_STDLIB_ID \
                               "; torch " MOLD_TORCH_VERSION

#if defined(_WIN32)
#  define MOLD_PLUGIN_EXPORT __declspec(dllexport)
#else
#  define MOLD_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

extern "C" {

/// Version 1 of the plugin descriptor. Grows only by appending fields.
struct mold_plugin_info {
  std::uint32_t
      api_version;  ///< MOLD_PLUGIN_API_VERSION the plugin was built with
  std::uint32_t
      struct_size;       ///< sizeof(mold_plugin_info) in the plugin's build
  const char* name;      ///< "qwen_image": unique among loaded plugins
  const char* version;   ///< the plugin's own version
  const char* build_id;  ///< MOLD_BUILD_ID of the plugin's build
  void (*register_all)(mold::Registrar&);
};

/// The name of the entry symbol, for the loader.
#define MOLD_PLUGIN_ENTRY_SYMBOL "mold_get_plugin_info"
}

/// Defines the entry point of a plugin. Use once, at namespace scope, in one
/// source file.
#define MOLD_PLUGIN(NAME, VERSION, REGISTER_ALL)                 \
  extern "C" MOLD_PLUGIN_EXPORT const mold_plugin_info*          \
  mold_get_plugin_info() {                                       \
    static const mold_plugin_info info{MOLD_PLUGIN_API_VERSION,  \
                                       sizeof(mold_plugin_info), \
                                       NAME,                     \
                                       VERSION,                  \
                                       MOLD_BUILD_ID,            \
                                       &REGISTER_ALL};           \
    return &info;                                                \
  }

namespace mold {
/// MOLD_BUILD_ID as the core was built; a plugin's must equal it.
const char* core_build_id();
}  // namespace mold
