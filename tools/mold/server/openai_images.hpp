#pragma once
// POST /v1/images/generations, the OpenAI Images API's shape over mold's own
// generate request (docs/http-api.md, "OpenAI-compatible images"): its
// fields read into a body of POST /api/generate, its answer
// ({"created", "data": [{"b64_json"} or {"url"}]}) and its errors
// ({"error": {"message", "type", "param", "code"}}, 400 where mold answers
// 422), so that OpenAI's clients work unchanged.

#include <cstdint>
#include <mold/base/error.hpp>
#include <mold/net/http_message.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mold_cli {

/// The model a request without "model" gets.
inline constexpr const char* kOpenAiDefaultModel = "z-image-turbo";
/// The most images one request may ask for (OpenAI's own limit).
inline constexpr int kOpenAiMaxImages = 10;

/// A refusal of an images request's field: the message, and the field as
/// the client sent it (the error's "param").
class OpenAiFieldError : public mold::InvalidArgument {
 public:
  OpenAiFieldError(std::string field, const std::string& message)
      : mold::InvalidArgument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct OpenAiImagesRequest {
  /// A body of POST /api/generate: model, prompt, width and height from
  /// size, and mold's own fields passed through (seed, steps, ...).
  nlohmann::json generate;
  int n = 1;
  bool urls = false;  ///< response_format "url" (else "b64_json")
  std::string size;   ///< as sent; "" for "auto" or none
};

/// Reads an OpenAI images request. Throws OpenAiFieldError naming the
/// field ("size", "n", "quality", ...) and what mold takes instead, for a
/// value mold does not implement as much as for a malformed one.
OpenAiImagesRequest read_openai_images(const nlohmann::json& body);

/// A refusal of mold's generate request (when read, or by the model's
/// limits when run) rephrased for the field the OpenAI client sent:
/// "width 17: ..." becomes `size "17x17": width 17: ...` (`size` as sent).
std::string openai_message(const std::string& size, std::string message);

/// An error in OpenAI's shape: mold's code lower-cased as "code", the
/// request field a validation message is about as "param" (width and height
/// as "size"; null when it names none), 400 where mold answers 422.
/// `field` (when not empty) is the param, whatever the message says.
mold::net::HttpResponse openai_error_response(
    std::string_view code, const std::string& message,
    const std::optional<nlohmann::json>& oom = std::nullopt,
    std::vector<std::pair<std::string, std::string>> headers = {},
    const std::string& field = "");

/// One image of the answer: its PNG as base64, or the address it is kept at.
struct OpenAiImage {
  std::string b64_json;
  std::string url;
};

/// {"created": unix seconds, "data": [...], "output_format": "png",
/// "size": "WxH"}.
nlohmann::json openai_images_answer(std::int64_t created,
                                    const std::vector<OpenAiImage>& images,
                                    int width, int height);

}  // namespace mold_cli
