#include "metal_oom_classifier.hpp"

#include <mold/oom/oom_text.hpp>
#include <string_view>

namespace backend_metal {

using mold::bytes_after;
using mold::collapse_whitespace;
using mold::ErrorContext;
using mold::OomReport;
using mold::start_report;

namespace {
bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}
}  // namespace

std::optional<OomReport> classify_metal_oom(const ErrorContext& error) {
  const std::string flat = collapse_whitespace(error.message);
  const bool mps = contains(flat, "MPS backend out of memory");
  // Command buffer status 8 is "Insufficient Memory"; timeouts (2), page faults
  // (11) and ignored submissions (4) are other failures.
  const bool command_buffer =
      contains(flat, "kIOGPUCommandBufferCallbackErrorOutOfMemory") ||
      contains(flat, "MTLCommandBufferErrorOutOfMemory") ||
      contains(flat, "Insufficient Memory (IOAF code 8)") ||
      (contains(flat, "MTLCommandBufferErrorDomain Code=8") &&
       contains(flat, "Insufficient Memory")) ||
      (contains(
          flat,
          "[METAL] Command buffer execution failed: Insufficient Memory"));
  const bool resource = contains(flat, "Failed to create metal resource");
  // MLX: "[metal::malloc] Attempting to allocate N bytes which is greater than
  // the maximum allowed buffer size of M bytes."; ggml: "buffer 'data' size N
  // is larger than buffer maximum of M".
  const bool buffer_limit =
      contains(flat, "which is greater than the maximum allowed buffer size") ||
      (contains(flat, "ggml_metal") &&
       contains(flat, "is larger than buffer maximum of"));
  if (!mps && !command_buffer && !resource && !buffer_limit)
    return std::nullopt;

  OomReport report = start_report(error, mps ? "mps" : "metal");
  if (mps) {
    // "MPS backend out of memory (MPS allocated: 17.63 GB, other
    // allocations: 1.38 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB
    // on private pool."
    report.requested = bytes_after(flat, "Tried to allocate ");
    report.allocated = bytes_after(flat, "MPS allocated: ");
    report.capacity = bytes_after(flat, "max allowed: ");
    report.other_allocations = bytes_after(flat, "other allocations: ");
    const auto& other = report.other_allocations;
    if (report.capacity && report.allocated && other &&
        *report.capacity >= *report.allocated + *other)
      report.free = *report.capacity - *report.allocated - *other;
    if (contains(flat, " on private pool")) report.pool = "private";
    if (contains(flat, " on shared pool")) report.pool = "shared";
  } else if (buffer_limit) {
    report.requested = bytes_after(flat, "Attempting to allocate ");
    if (!report.requested) report.requested = bytes_after(flat, "' size ");
    report.capacity = bytes_after(flat, "maximum allowed buffer size of ");
    if (!report.capacity)
      report.capacity = bytes_after(flat, "buffer maximum of ");
  }
  return report;
}

}  // namespace backend_metal
