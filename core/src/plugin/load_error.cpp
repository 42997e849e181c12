#include "mold/plugin/load_error.hpp"

#include <optional>

namespace mold {

std::string_view to_string(LoadErrorKind kind) {
  switch (kind) {
  case LoadErrorKind::missing_directory:
    return "missing_directory";
  case LoadErrorKind::not_loadable:
    return "not_loadable";
  case LoadErrorKind::missing_entry_symbol:
    return "missing_entry_symbol";
  case LoadErrorKind::entry_point_threw:
    return "entry_point_threw";
  case LoadErrorKind::null_info:
    return "null_info";
  case LoadErrorKind::api_version_mismatch:
    return "api_version_mismatch";
  case LoadErrorKind::struct_too_small:
    return "struct_too_small";
  case LoadErrorKind::invalid_name:
    return "invalid_name";
  case LoadErrorKind::build_id_mismatch:
    return "build_id_mismatch";
  case LoadErrorKind::null_register_all:
    return "null_register_all";
  case LoadErrorKind::register_threw:
    return "register_threw";
  case LoadErrorKind::duplicate:
    return "duplicate";
  case LoadErrorKind::crashed:
    return "crashed";
  case LoadErrorKind::exited:
    return "exited";
  case LoadErrorKind::timed_out:
    return "timed_out";
  case LoadErrorKind::wrote_output:
    return "wrote_output";
  }
  return "unknown";
}

std::optional<LoadErrorKind> load_error_kind_from_string(
    std::string_view name) {
  for (int i = 0; i <= int(LoadErrorKind::wrote_output); ++i)
    if (to_string(LoadErrorKind(i)) == name) return LoadErrorKind(i);
  return std::nullopt;
}

}  // namespace mold
