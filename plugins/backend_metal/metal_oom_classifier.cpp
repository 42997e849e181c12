#include "metal_oom_classifier.hpp"

#include <mold/oom_text.hpp>
#include <string_view>

namespace mold::backend_metal {

namespace {
bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}
}  // namespace

std::optional<OomReport> classify_metal_oom(const ErrorContext& error) {
  const std::string_view text = error.message;
  const bool mps = contains(text, "MPS backend out of memory");
  const bool metal =
      contains(text, "kIOGPUCommandBufferCallbackErrorOutOfMemory") ||
      contains(text, "MTLCommandBufferErrorOutOfMemory") ||
      contains(text, "Failed to create metal resource") ||
      (contains(text, "Insufficient Memory") &&
       !contains(text, "kIOGPUCommandBufferCallbackErrorTimeout"));
  if (!mps && !metal) return std::nullopt;

  OomReport report;
  report.backend = mps ? "mps" : "metal";
  report.origin = error.origin;
  report.raw_message = error.message;
  report.message = strip_backtrace(text);
  report.requested = bytes_after(text, "Tried to allocate ");
  if (mps) {
    // "MPS backend out of memory (MPS allocated: 17.63 GB, other
    // allocations: 1.38 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB
    // on private pool."
    report.allocated = bytes_after(text, "MPS allocated: ");
    report.capacity = bytes_after(text, "max allowed: ");
    const auto other = bytes_after(text, "other allocations: ");
    if (report.capacity && report.allocated && other &&
        *report.capacity >= *report.allocated + *other)
      report.free = *report.capacity - *report.allocated - *other;
    if (contains(text, " on private pool")) report.device = "private pool";
    if (contains(text, " on shared pool")) report.device = "shared pool";
  }
  return report;
}

}  // namespace mold::backend_metal
