#pragma once
/// The errors of mold's HTTP API: every failure is a JSON body
/// {"error": message, "code": CODE} (plus "oom" for an out-of-memory error)
/// with the status its code implies (docs/http-api.md, "Errors").

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/net/http_message.hpp"

namespace mold::net {

namespace codes {
inline constexpr std::string_view kBadRequest = "BAD_REQUEST";         // 400
inline constexpr std::string_view kInvalidJson = "INVALID_JSON";       // 400
inline constexpr std::string_view kUnauthorized = "UNAUTHORIZED";      // 401
inline constexpr std::string_view kNotFound = "NOT_FOUND";             // 404
inline constexpr std::string_view kModelNotFound = "MODEL_NOT_FOUND";  // 404
inline constexpr std::string_view kMethodNotAllowed =
    "METHOD_NOT_ALLOWED";                                               // 405
inline constexpr std::string_view kRequestTimeout = "REQUEST_TIMEOUT";  // 408
inline constexpr std::string_view kPayloadTooLarge =
    "PAYLOAD_TOO_LARGE";  // 413
inline constexpr std::string_view kUnsupportedMediaType =
    "UNSUPPORTED_MEDIA_TYPE";                                             // 415
inline constexpr std::string_view kValidationError = "VALIDATION_ERROR";  // 422
/// Admission: the job needs more than this device could ever give it.
inline constexpr std::string_view kNeverFits = "NEVER_FITS";  // 422
inline constexpr std::string_view kHeadersTooLarge =
    "HEADERS_TOO_LARGE";                                                // 431
inline constexpr std::string_view kInferenceError = "INFERENCE_ERROR";  // 500
inline constexpr std::string_view kInternalError = "INTERNAL_ERROR";    // 500
inline constexpr std::string_view kInsufficientMemory =
    "INSUFFICIENT_MEMORY";                                    // 503
inline constexpr std::string_view kQueueFull = "QUEUE_FULL";  // 503
inline constexpr std::string_view kTooManyConnections =
    "TOO_MANY_CONNECTIONS";                                         // 503
inline constexpr std::string_view kServerBusy = "SERVER_BUSY";      // 503
inline constexpr std::string_view kShuttingDown = "SHUTTING_DOWN";  // 503
}  // namespace codes

/// An error code and the HTTP status it is answered with.
struct CodeStatus {
  std::string_view code;
  int status = 500;
};
/// Every code above with its status, in docs/http-api.md's order (a test
/// checks the document's table against this one).
const std::vector<CodeStatus>& code_statuses();

/// The HTTP status of an error code (500 for a code not listed above).
int status_of(std::string_view code);

/// {"error": message, "code": code[, "oom": oom]} with status_of(code).
/// Extra headers (Retry-After) in `headers`.
HttpResponse error_response(
    std::string_view code, const std::string& message,
    std::optional<nlohmann::json> oom = std::nullopt,
    std::vector<std::pair<std::string, std::string>> headers = {});

/// "a string", "a number", "null", ...: a JSON value's type for messages.
std::string json_type_name(const nlohmann::json& value);

/// The JSON body alone (the `error` event of a stream carries it too).
nlohmann::json error_body(std::string_view code, const std::string& message,
                          std::optional<nlohmann::json> oom = std::nullopt);

}  // namespace mold::net
