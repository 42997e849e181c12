#include "oom/core_classifiers.hpp"

#include <array>
#include <cctype>
#include <string>
#include <string_view>

#include "mold/oom/oom_text.hpp"

namespace mold {

namespace {

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// "out of memory" as words, not inside a path or a file name
// ("/var/log/out-of-memory.log", "out_of_memory/"), and not TensorFlow's
// warning that "the caller indicates that this is not a failure".
bool says_out_of_memory(std::string_view text) {
  if (contains(text, "this is not a failure")) return false;
  std::string lower(text);
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t at = lower.find("out of memory"); at != std::string::npos;
       at = lower.find("out of memory", at + 1)) {
    const std::size_t end = at + 13;
    const bool path_before =
        at > 0 && (text[at - 1] == '/' || text[at - 1] == '_' ||
                   text[at - 1] == '-' || text[at - 1] == '\\');
    const bool path_after =
        end < text.size() &&
        (text[end] == '/' || text[end] == '_' || text[end] == '-' ||
         text[end] == '\\' ||
         (text[end] == '.' && end + 1 < text.size() &&
          std::isalpha(static_cast<unsigned char>(text[end + 1]))));
    if (!path_before && !path_after) return true;
  }
  return false;
}

// Python's MemoryError as an exception name ("MemoryError",
// "numpy...MemoryError:",
// "_ArrayMemoryError"), not as part of another word.
bool python_memory_error(std::string_view text) {
  for (std::size_t at = text.find("MemoryError"); at != std::string_view::npos;
       at = text.find("MemoryError", at + 1)) {
    const std::size_t end = at + 11;
    const bool starts =
        at == 0 || !std::isalpha(static_cast<unsigned char>(text[at - 1])) ||
        (at >= 5 && text.substr(at - 5, 5) == "Array");
    const bool ends = end == text.size() || !is_word_char(text[end]);
    if (starts && ends) return true;
  }
  return false;
}

// "OOM" in capitals as a word of its own ("Got an OOM, unloading"), not in a
// name
// ("OOM_SCORE", "/oom/").
bool oom_as_word(std::string_view text) {
  for (auto at = text.find("OOM"); at != std::string_view::npos;
       at = text.find("OOM", at + 1)) {
    const bool before_ok =
        at == 0 || (!is_word_char(text[at - 1]) && text[at - 1] != '/' &&
                    text[at - 1] != '-');
    const std::size_t end = at + 3;
    const bool after_ok =
        end == text.size() || (!is_word_char(text[end]) && text[end] != '/' &&
                               text[end] != '-' && text[end] != '.');
    if (before_ok && after_ok) return true;
  }
  return false;
}

}  // namespace

std::optional<OomReport> classify_cpu_oom(const ErrorContext& error) {
  const std::string text = collapse_whitespace(error.message);
  if (contains(text, "CPU out of memory. Tried to allocate")) {
    // The cpu backend's own: "CPU out of memory. Tried to allocate X. Limit L,
    // of which F is free."
    auto report = start_report(error, "cpu");
    report.requested = bytes_after(text, "Tried to allocate ");
    report.capacity = bytes_after(text, "Limit ");
    report.limit = report.capacity;  // the user's limit, not the hardware's
    report.free = bytes_before(text, " is free");
    return report;
  }
  if (contains(text, "DefaultCPUAllocator: can't allocate memory") ||
      contains(text, "DefaultCPUAllocator: not enough memory")) {
    auto report = start_report(error, "cpu");
    report.requested = bytes_after(text, "you tried to allocate ");
    return report;
  }
  // numpy: "Unable to allocate 7.91 GiB for an array with shape ..."
  if (contains(text, "Unable to allocate") &&
      (contains(text, "for an array") || contains(text, "for array") ||
       contains(text, "array with shape"))) {
    auto report = start_report(error, "cpu");
    report.requested = bytes_after(text, "Unable to allocate ");
    return report;
  }
  // The JVM: "os::commit_memory(0x00000000c5330000, 181207040, 0) failed;
  // error='Cannot allocate memory' (errno=12)"
  if (const auto at = text.find("os::commit_memory(");
      at != std::string::npos && contains(text, "Cannot allocate memory")) {
    auto report = start_report(error, "cpu");
    report.requested = bytes_after(std::string_view(text).substr(at), ", ");
    return report;
  }
  const bool host_failure =
      error.exception_kind == "std::bad_alloc" ||
      contains(text, "std::bad_alloc") ||
      // libtorch < 1.6: "posix_memalign(&data, gAlignment, nbytes) == 0. 12 vs
      // 0"
      (contains(text, "posix_memalign") && contains(text, "12 vs 0")) ||
      // ENOMEM as strerror prints it, and the kernel's OOM killer
      contains(text, "Cannot allocate memory") ||
      contains(text, "Out of memory: Killed process") ||
      contains(text, "There is insufficient memory for the Java Runtime") ||
      python_memory_error(text);
  if (host_failure) return start_report(error, "cpu");
  return std::nullopt;
}

std::optional<OomReport> classify_xpu_oom(const ErrorContext& error) {
  const std::string text = collapse_whitespace(error.message);
  if (!contains(text, "XPU out of memory") &&
      !contains(text, "can NOT allocate memory block"))
    return std::nullopt;
  auto report = start_report(error, "xpu");
  read_pytorch_allocator_numbers(text, report);
  return report;
}

std::optional<OomReport> classify_generic_oom(const ErrorContext& error) {
  const std::string text = collapse_whitespace(error.message);
  const bool recognised =
      contains(text, "OutOfDeviceMemory") ||
      contains(text, "ERROR_OUT_OF_DEVICE_MEMORY") ||
      contains(text, "ErrorOutOfHostMemory") ||
      contains(text, "CL_MEM_OBJECT_ALLOCATION_FAILURE") ||
      contains(text, "RESOURCE_EXHAUSTED: Out of memory") ||
      contains(text, "Resource exhausted: Out of memory") ||
      contains(text, "OOM when allocating tensor") ||
      contains(text,
               "Failed to allocate memory for requested buffer of size") ||
      contains(text, "not enough GPU video memory") ||
      // DirectML: a failed D3D12 allocation, with no memory wording at all
      (contains(text, "CreateCommittedResource") &&
       contains(text, "CHECK failed")) ||
      says_out_of_memory(text) || oom_as_word(text);
  if (!recognised) return std::nullopt;
  auto report = start_report(
      error, error.origin.backend.empty() ? "unknown" : error.origin.backend);
  read_pytorch_allocator_numbers(text, report);
  const auto first = [&](std::initializer_list<std::string_view> markers) {
    for (auto m : markers)
      if (!report.requested) report.requested = bytes_after(text, m);
  };
  first({"while trying to allocate ", "requested buffer of size ",
         "Could not allocate tensor with ", "allocation of size ",
         "failed to allocate "});
  return report;
}

}  // namespace mold
