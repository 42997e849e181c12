#include "core_classifiers.hpp"

#include <cctype>

#include "mold/oom_text.hpp"

namespace mold {

namespace {

OomReport base_report(const ErrorContext& error, std::string backend) {
  OomReport report;
  report.backend = std::move(backend);
  report.origin = error.origin;
  report.raw_message = error.message;
  report.message = strip_backtrace(error.message);
  return report;
}

// "out of memory" as words, not inside a path or file name
// ("/tmp/out-of-memory.log").
bool says_out_of_memory(std::string_view text) {
  std::size_t from = 0;
  while (true) {
    std::string lower(text.substr(from));
    for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    const auto at = lower.find("out of memory");
    if (at == std::string::npos) return false;
    const std::size_t begin = from + at, end = begin + 13;
    const bool path_before =
        begin > 0 && (text[begin - 1] == '/' || text[begin - 1] == '_' ||
                      text[begin - 1] == '-');
    const bool path_after =
        end < text.size() &&
        (text[end] == '/' || text[end] == '_' || text[end] == '-' ||
         (text[end] == '.' && end + 1 < text.size() &&
          std::isalpha(static_cast<unsigned char>(text[end + 1]))));
    if (!path_before && !path_after) return true;
    from = end;
  }
}

}  // namespace

std::optional<OomReport> classify_cpu_oom(const ErrorContext& error) {
  const std::string_view text = error.message;
  if (text.find("CPU out of memory. Tried to allocate") !=
      std::string_view::npos) {
    auto report = base_report(error, "cpu");
    report.requested = bytes_after(text, "Tried to allocate ");
    report.capacity = bytes_after(text, "Limit ");
    report.free = bytes_before(text, " is free");
    return report;
  }
  if (text.find("DefaultCPUAllocator: can't allocate memory") !=
          std::string_view::npos ||
      text.find("DefaultCPUAllocator: not enough memory") !=
          std::string_view::npos) {
    auto report = base_report(error, "cpu");
    report.requested = bytes_after(text, "you tried to allocate ");
    return report;
  }
  if (error.exception_kind == "std::bad_alloc" ||
      text.find("std::bad_alloc") != std::string_view::npos) {
    return base_report(error, "cpu");
  }
  return std::nullopt;
}

std::optional<OomReport> classify_generic_oom(const ErrorContext& error) {
  const std::string_view text = error.message;
  const bool recognised =
      text.find("ErrorOutOfDeviceMemory") != std::string_view::npos ||
      text.find("ERROR_OUT_OF_DEVICE_MEMORY") != std::string_view::npos ||
      text.find("ErrorOutOfHostMemory") != std::string_view::npos ||
      says_out_of_memory(text);
  if (!recognised) return std::nullopt;
  auto report = base_report(
      error, error.origin.backend.empty() ? "unknown" : error.origin.backend);
  report.requested = bytes_after(text, "Tried to allocate ");
  return report;
}

}  // namespace mold
