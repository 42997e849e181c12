#include "openai_images.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/net/api_error.hpp>
#include <mold/plan/generate_schema.hpp>

namespace mold_cli {

namespace net = mold::net;
using Json = nlohmann::json;

namespace {

[[noreturn]] void refuse(std::string_view field, const std::string& why) {
  throw OpenAiFieldError(std::string(field), fmt::format("{}: {}", field, why));
}

/// The OpenAI request's own fields.
const std::vector<std::string>& openai_fields() {
  static const std::vector<std::string> fields = {
      "prompt",     "model",           "n",
      "size",       "response_format", "user",
      "quality",    "style",           "background",
      "moderation", "output_format",   "output_compression",
      "stream",     "partial_images"};
  return fields;
}

/// mold's generate fields an images request may add (seed, steps, ...)
/// and `tiny`: all but the ones the OpenAI fields stand for, and `images`
/// (the sources of an edit).
bool passed_through(std::string_view name) {
  return name == "tiny" ||
         (mold::find_generate_field(name) && name != "width" &&
          name != "height" && name != "batch" && name != "prompt");
}

/// The request field a message is about, from its first word ("size
/// \"17x17\": ...", "n: ...", "steps 0 ..."): a field an images request
/// has, or none ("the body should be ...", "10 images ...").
Json field_of(const std::string& message) {
  const auto end = message.find_first_of(" :");
  if (end == std::string::npos || end == 0) return nullptr;
  const std::string word = message.substr(0, end);
  const std::string name = word.substr(0, word.find('['));
  const auto& own = openai_fields();
  const bool known = std::find(own.begin(), own.end(), name) != own.end() ||
                     passed_through(name);
  return known ? Json(word) : Json(nullptr);
}

const Json* field(const Json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

/// A string field that must be one of `taken`; null is the first.
std::string one_of(const Json& body, const char* name,
                   const std::vector<std::string>& taken,
                   const std::string& otherwise) {
  const Json* value = field(body, name);
  if (!value) return taken.front();
  if (!value->is_string())
    refuse(name, fmt::format("should be a string, not {}",
                             net::json_type_name(*value)));
  const std::string text = value->get<std::string>();
  if (std::find(taken.begin(), taken.end(), text) == taken.end())
    refuse(name, fmt::format("\"{}\" {}", mold::shown_value(text), otherwise));
  return text;
}

int read_n(const Json& body) {
  const Json* value = field(body, "n");
  if (!value) return 1;
  if (!value->is_number_integer())
    refuse("n", fmt::format("should be a whole number of images (1 to {}), "
                            "not {}",
                            kOpenAiMaxImages, net::json_type_name(*value)));
  const auto n = value->get<long long>();
  if (n < 1 || n > kOpenAiMaxImages)
    refuse("n", fmt::format("{} images is out of range: 1 to {}", n,
                            kOpenAiMaxImages));
  return int(n);
}

/// "WIDTHxHEIGHT" into the generate body's width and height; "" for auto.
std::string read_size(const Json& body, Json& generate) {
  const Json* value = field(body, "size");
  if (!value) return {};
  if (!value->is_string())
    refuse("size", fmt::format("should be a string such as \"1024x1024\", "
                               "not {}",
                               net::json_type_name(*value)));
  const std::string size = value->get<std::string>();
  if (size == "auto") return {};
  const auto x = size.find('x');
  const auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 5 &&
           std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isdigit((unsigned char)c); });
  };
  if (x == std::string::npos || !digits(std::string_view(size).substr(0, x)) ||
      !digits(std::string_view(size).substr(x + 1)))
    refuse("size", fmt::format("\"{}\" is not WIDTHxHEIGHT in pixels (such "
                               "as \"1024x1024\") or \"auto\"",
                               mold::shown_value(size)));
  generate["width"] = std::stoi(size.substr(0, x));
  generate["height"] = std::stoi(size.substr(x + 1));
  return size;
}

/// The fields that would change the image in ways mold does not implement
/// are refused by name; the ones that change nothing here are taken.
void check_unimplemented(const Json& body) {
  one_of(body, "quality", {"auto", "standard"},
         "is not a setting mold has: leave quality out (or send \"auto\"); "
         "mold's own steps field sets how many denoising steps run");
  if (field(body, "style"))
    refuse("style", "mold's models have no style setting; leave it out");
  one_of(body, "background", {"auto", "opaque"},
         "is not one mold makes: its PNGs are opaque; leave background out or "
         "send \"opaque\"");
  one_of(body, "moderation", {"auto", "low"}, "should be \"auto\" or \"low\"");
  one_of(body, "output_format", {"png"},
         "is not one mold writes: it writes PNG; leave output_format out or "
         "send \"png\"");
  if (field(body, "output_compression"))
    refuse("output_compression",
           "is only for jpeg and webp, which mold does not write; leave it "
           "out");
  if (const Json* stream = field(body, "stream");
      stream && !(stream->is_boolean() && !stream->get<bool>()))
    refuse("stream",
           "mold streams its progress at POST /api/generate/stream "
           "(docs/http-api.md); leave stream out here");
  if (const Json* partial = field(body, "partial_images");
      partial &&
      !(partial->is_number_integer() && partial->get<long long>() == 0))
    refuse("partial_images", "mold sends no partial images; leave it out");
  if (const Json* user = field(body, "user")) {
    if (!user->is_string())
      refuse("user", fmt::format("should be a string, not {}",
                                 net::json_type_name(*user)));
    if (user->get_ref<const std::string&>().size() > 256)
      refuse("user", "is longer than 256 bytes");
  }
}

}  // namespace

OpenAiImagesRequest read_openai_images(const Json& body) {
  if (!body.is_object())
    throw OpenAiFieldError(
        "", fmt::format("the body should be a JSON object, not {}",
                        net::json_type_name(body)));
  const auto& own = openai_fields();
  for (const auto& item : body.items())
    if (std::find(own.begin(), own.end(), item.key()) == own.end() &&
        !passed_through(item.key()))
      refuse(mold::shown_value(item.key()),
             fmt::format("is not a field of an images request ({}; and "
                         "mold's own, such as seed and steps)",
                         mold::join_names(own)));
  if (!field(body, "prompt")) refuse("prompt", "is required (a string)");
  check_unimplemented(body);
  OpenAiImagesRequest request;
  request.n = read_n(body);
  request.urls = one_of(body, "response_format", {"b64_json", "url"},
                        "should be \"b64_json\" or \"url\"") == "url";
  Json& generate = request.generate;
  generate = Json::object();
  generate["model"] =
      field(body, "model") ? body["model"] : Json(kOpenAiDefaultModel);
  request.size = read_size(body, generate);
  for (const auto& item : body.items())
    if (item.key() == "prompt" || passed_through(item.key()))
      generate[item.key()] = item.value();
  return request;
}

std::string openai_message(const std::string& size, std::string message) {
  const auto names = [&message](std::string_view field) {
    return message.rfind(field, 0) == 0 && message.size() > field.size() &&
           (message[field.size()] == ' ' || message[field.size()] == ':');
  };
  if (!size.empty() && (names("width") || names("height")))
    return fmt::format("size \"{}\": {}", size, message);
  return message;
}

net::HttpResponse openai_error_response(
    std::string_view code, const std::string& message,
    const std::optional<Json>& oom,
    std::vector<std::pair<std::string, std::string>> headers,
    const std::string& field) {
  const int mold_status = net::status_of(code);
  const Json param = !field.empty()                         ? Json(field)
                     : code == net::codes::kValidationError ? field_of(message)
                                                            : Json(nullptr);
  std::string lowered(code);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  Json error = {
      {"message", message},
      {"type", mold_status >= 500 ? "server_error" : "invalid_request_error"},
      {"param", param},
      {"code", lowered}};
  if (oom) error["oom"] = *oom;
  net::HttpResponse response;
  response.status = mold_status == 422 ? 400 : mold_status;
  response.headers = std::move(headers);
  response.error = std::string(code) + ": " + message;
  response.body = Json{{"error", error}}.dump(-1, ' ', false,
                                              Json::error_handler_t::replace);
  return response;
}

Json openai_images_answer(std::int64_t created,
                          const std::vector<OpenAiImage>& images, int width,
                          int height) {
  Json data = Json::array();
  for (const auto& image : images)
    data.push_back(image.url.empty() ? Json{{"b64_json", image.b64_json}}
                                     : Json{{"url", image.url}});
  return {{"created", created},
          {"data", std::move(data)},
          {"output_format", "png"},
          {"size", fmt::format("{}x{}", width, height)}};
}

}  // namespace mold_cli
