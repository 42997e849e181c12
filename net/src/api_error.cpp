#include "mold/net/api_error.hpp"

#include <array>
#include <utility>

namespace mold::net {

const std::vector<CodeStatus>& code_statuses() {
  static const std::vector<CodeStatus> table = {
      {codes::kBadRequest, 400},
      {codes::kInvalidJson, 400},
      {codes::kUnauthorized, 401},
      {codes::kNotFound, 404},
      {codes::kModelNotFound, 404},
      {codes::kMethodNotAllowed, 405},
      {codes::kRequestTimeout, 408},
      {codes::kPayloadTooLarge, 413},
      {codes::kUnsupportedMediaType, 415},
      {codes::kValidationError, 422},
      {codes::kNeverFits, 422},
      {codes::kHeadersTooLarge, 431},
      {codes::kInferenceError, 500},
      {codes::kInternalError, 500},
      {codes::kInsufficientMemory, 503},
      {codes::kQueueFull, 503},
      {codes::kTooManyConnections, 503},
      {codes::kServerBusy, 503},
      {codes::kShuttingDown, 503},
  };
  return table;
}

int status_of(std::string_view code) {
  for (const auto& [name, status] : code_statuses())
    if (name == code) return status;
  return 500;
}

nlohmann::json error_body(std::string_view code, const std::string& message,
                          std::optional<nlohmann::json> oom) {
  nlohmann::json body = {{"error", message}, {"code", std::string(code)}};
  if (oom) body["oom"] = std::move(*oom);
  return body;
}

HttpResponse error_response(
    std::string_view code, const std::string& message,
    std::optional<nlohmann::json> oom,
    std::vector<std::pair<std::string, std::string>> headers) {
  HttpResponse response;
  response.status = status_of(code);
  response.headers = std::move(headers);
  response.error = std::string(code) + ": " + message;
  // Invalid UTF-8 in a message (a path, a client's value) must not make the
  // error itself fail: replace it.
  response.body =
      error_body(code, message, std::move(oom))
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

std::string json_type_name(const nlohmann::json& v) {
  return v.is_string()    ? "a string"
         : v.is_boolean() ? "true/false"
         : v.is_number()  ? "a number"
         : v.is_null()    ? "null"
         : v.is_array()   ? "an array"
                          : "an object";
}

}  // namespace mold::net
