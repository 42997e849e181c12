#pragma once
// An answer of mold serve that is not an image, and the one map from any
// exception to it: every route and every job answers failures through
// current_failure(), so a new exception type is mapped once.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/readable_error.hpp"

namespace mold_cli {

/// An API error code, its message, for an out-of-memory error the report
/// (net/oom_json.hpp), and headers (Retry-After).
struct ApiFailure {
  std::string code;
  std::string message;
  /// The request field refused, as the client sent it ("n", "size"): the
  /// OpenAI routes' "param". Empty when the message names none or it is
  /// read from the message (openai_error_response).
  std::string field;
  std::optional<nlohmann::json> oom;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A failure with a code and a message.
ApiFailure api_failure(std::string_view code, std::string message);

/// 503 SHUTTING_DOWN with Retry-After: another server, or this one restarted.
ApiFailure shutting_down();

/// Seconds a client is told to wait (Retry-After) when the device has no room
/// now: the time one job takes here, at least 1 s.
inline constexpr int kRetryAfterNoRoom = 5;

/// Call in a catch block: the exception in flight as the API answers it.
///   mold::NotFound           404 MODEL_NOT_FOUND
///   mold::InvalidArgument    422 VALIDATION_ERROR
///   mold::Cancelled          400 BAD_REQUEST (its client went away)
///   mold::InsufficientMemory 503 INSUFFICIENT_MEMORY, Retry-After, the
///                            cache's numbers under oom.admission
///   an out-of-memory error   500 INFERENCE_ERROR with the classified report
///   anything else            500 INFERENCE_ERROR, readable (no backtrace)
/// `context` names the backend and device (the labels and hints).
ApiFailure current_failure(const mold::tools::FailureContext& context);

}  // namespace mold_cli
