#pragma once
/// Why a plugin was skipped.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace mold {

/// Each check of the plugin ABI has its own kind, in the order the loader makes
/// them.
enum class LoadErrorKind {
  missing_directory,  ///< a directory in the search path does not exist
  not_loadable,  ///< dlopen failed: not a library, wrong architecture, missing
                 ///< deps
  missing_entry_symbol,  ///< no mold_get_plugin_info
  entry_point_threw,     ///< mold_get_plugin_info() threw
  null_info,             ///< mold_get_plugin_info() returned null
  api_version_mismatch,  ///< built for another MOLD_PLUGIN_API_VERSION
  struct_too_small,  ///< struct_size smaller than this API version's descriptor
  invalid_name,      ///< the name is empty or not [A-Za-z0-9_.-]
  build_id_mismatch,  ///< other C++ ABI or libtorch version than the core
  null_register_all,  ///< register_all is null
  register_threw,     ///< register_all threw
  duplicate,          ///< a plugin name or a registered key is already taken
  // Found by the scanner (plugin_scanner.hpp), which loads the plugin in a
  // child process first:
  crashed,       ///< the child died of a signal (abort, segfault) while loading
  exited,        ///< the child called exit() (or _exit) while loading
  timed_out,     ///< loading did not finish within the scan's time limit
  wrote_output,  ///< loading wrote to stdout or stderr (it would corrupt
                 ///< --json)
};

/// "api_version_mismatch", ...: the names molddiag prints and the JSON carries.
std::string_view to_string(LoadErrorKind kind);
/// The kind named `name` (as to_string gives it); nullopt for any other text.
std::optional<LoadErrorKind> load_error_kind_from_string(std::string_view name);

struct LoadError {
  std::filesystem::path path;
  LoadErrorKind kind;
  std::string message;  ///< what happened and what to do
};

}  // namespace mold
