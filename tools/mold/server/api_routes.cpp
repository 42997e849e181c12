#include "api_routes.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <mold/base/build_config.hpp>
#include <mold/base/text.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/net/api_error.hpp>
#include <mold/net/base64.hpp>
#include <mold/net/generate_json.hpp>
#include <mold/net/query_string.hpp>
#include <mold/net/sse.hpp>
#include <mold/plan/generate_schema.hpp>
#include <mold/runtime/event_json.hpp>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "common/image_input.hpp"
#include "openai_images.hpp"
#include "openai_models.hpp"

namespace mold_cli {

namespace net = mold::net;
namespace codes = mold::net::codes;
using Json = nlohmann::json;

namespace {

/// A request the routes refuse: its code and message.
struct Refused {
  std::string_view code;
  std::string message;
  std::string field = {};  ///< the request field refused, when one is
};

net::HttpResponse json_response(const Json& body, int status = 200) {
  net::HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

net::HttpResponse failure_response(const ApiFailure& f,
                                   Dialect dialect = Dialect::mold) {
  return dialect == Dialect::openai
             ? openai_error_response(f.code, f.message, f.oom, f.headers,
                                     f.field)
             : net::error_response(f.code, f.message, f.oom, f.headers);
}

bool same_secret(const std::string& a, const std::string& b) {
  // Constant time in the length of the given secret: no early exit.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

Json parse_body(const net::HttpRequest& request, bool allow_empty) {
  if (request.body.empty() && allow_empty) return Json::object();
  const std::string type = request.header("Content-Type");
  const std::string media = type.substr(0, type.find(';'));
  std::string lowered;
  for (const char c : media)
    if (c != ' ') lowered += char(std::tolower(static_cast<unsigned char>(c)));
  if (lowered != "application/json")
    throw Refused{codes::kUnsupportedMediaType,
                  fmt::format("the body must be JSON (Content-Type: "
                              "application/json); it was sent as \"{}\"",
                              mold::shown_value(type))};
  if (mold::json_nesting_depth(request.body) > 32)
    throw Refused{codes::kInvalidJson,
                  "the JSON body nests arrays or objects more than 32 deep"};
  // The last key read, to name the field whose value the parser refuses.
  std::string key;
  const Json::parser_callback_t track = [&key](int, Json::parse_event_t event,
                                               Json& parsed) {
    if (event == Json::parse_event_t::key) key = parsed.get<std::string>();
    return true;
  };
  try {
    return Json::parse(request.body, track);
  } catch (const Json::parse_error& e) {
    throw Refused{codes::kInvalidJson,
                  fmt::format("the body is not valid JSON (at byte {}): {}",
                              e.byte, mold::shown_value(e.what(), 160))};
  } catch (const Json::exception&) {
    // Valid syntax that a 64-bit float cannot hold (1e400): the parser's
    // own text would quote the whole number back.
    throw Refused{
        codes::kValidationError,
        fmt::format("{}: a number beyond what a 64-bit float holds (at most "
                    "about 1.8e308 either way)",
                    key.empty() ? "the body" : mold::shown_value(key)),
        key.empty() ? "" : mold::shown_value(key)};
  }
}

/// The most source images one generate request may carry.

[[noreturn]] void invalid(const std::string& field, const std::string& why) {
  throw Refused{codes::kValidationError, fmt::format("{}: {}", field, why),
                field};
}

std::string string_field(const Json& body, const char* name, bool required,
                         std::size_t max_bytes) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) invalid(name, "is required (a string)");
    return {};
  }
  if (!it->is_string())
    invalid(name, fmt::format("should be a string, not {}",
                              net::json_type_name(*it)));
  std::string value = it->get<std::string>();
  if (value.size() > max_bytes)
    invalid(name,
            fmt::format("is {} bytes; at most {}", value.size(), max_bytes));
  return value;
}

GenerationRequest parse_generation(const Json& body, std::size_t max_prompt) {
  if (!body.is_object())
    throw Refused{codes::kValidationError,
                  fmt::format("the body should be a JSON object, not {}",
                              net::json_type_name(body))};
  // The schema's fields, and the request's own.
  static const std::vector<std::string> request_fields = {"model", "tiny",
                                                          "images"};
  for (const auto& item : body.items())
    if (!mold::find_generate_field(item.key()) &&
        std::find(request_fields.begin(), request_fields.end(), item.key()) ==
            request_fields.end())
      invalid(mold::shown_value(item.key()),
              fmt::format("is not a field of a generate request ({}, {})",
                          mold::join_names(request_fields),
                          mold::generate_field_names()));
  GenerationRequest r;
  r.model_spec = string_field(body, "model", true, 256);
  if (r.model_spec.empty()) invalid("model", "is empty");
  mold::GenerateRequest& g = r.generate;
  try {
    mold::net::read_generate_fields(body, g, max_prompt);
  } catch (const mold::InvalidArgument& e) {
    throw Refused{codes::kValidationError, e.what()};
  }
  if (!body.contains("seed")) {  // a server's default: a random seed
    static std::mutex mutex;
    static std::mt19937_64 random{std::random_device{}()};
    std::lock_guard<std::mutex> lock(mutex);
    g.seed = random() >> 32;
  }
  if (g.batch != 1)
    invalid("batch",
            "the server makes one image per request; send one request per "
            "image with seed, seed + 1, ... (mold run with MOLD_HOST does)");
  if (const auto it = body.find("tiny"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) invalid("tiny", "should be true or false");
    r.tiny = it->get<bool>();
  }
  if (const auto it = body.find("images"); it != body.end() && !it->is_null()) {
    if (!it->is_array() || it->size() > mold::tools::kMaxSourceImages)
      invalid("images",
              fmt::format("should be an array of at most {} base64 PNG "
                          "strings (an edit's source images)",
                          mold::tools::kMaxSourceImages));
    // Every image's size is checked from its header before any is decoded.
    std::vector<std::string> pngs;
    std::vector<mold::tools::NamedPng> named;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string field = fmt::format("images[{}]", i);
      const Json& item = (*it)[i];
      if (!item.is_string()) invalid(field, "should be a base64 PNG string");
      std::optional<std::string> png =
          net::base64_decode(item.get_ref<const std::string&>());
      if (!png) invalid(field, "is not padded standard base64");
      pngs.push_back(std::move(*png));
    }
    for (std::size_t i = 0; i < pngs.size(); ++i)
      named.push_back({fmt::format("images[{}]", i), pngs[i]});
    try {
      mold::tools::check_source_image_budget(named);
    } catch (const mold::InvalidArgument& e) {
      throw Refused{codes::kValidationError, e.what()};
    }
    for (const auto& [field, png] : named) {
      try {
        g.images.push_back(mold::tools::decode_source_image(field, png));
      } catch (const mold::Error& e) {
        invalid(field,
                fmt::format("is not an image mold can read ({})", e.what()));
      }
    }
  }
  return r;
}

}  // namespace

/// One event stream's state, shared by the worker's callbacks and the
/// heartbeat.
struct EventStream {
  std::shared_ptr<net::ResponseChannel> channel;
  std::mutex mutex;
  bool begun = false;
  std::string request_id;

  void begin_locked() {
    if (begun) return;
    begun = true;
    channel->begin_stream(200, "text/event-stream", {});
  }
  void event(const char* name, const Json& data) {
    std::lock_guard<std::mutex> lock(mutex);
    begin_locked();
    channel->write(net::format_sse(
        name, data.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  bool ended = false;
  /// A comment, only between events of a stream that has begun.
  void heartbeat() {
    std::lock_guard<std::mutex> lock(mutex);
    if (begun && !ended) channel->write(net::sse_comment("keep-alive"));
  }
};

namespace {

Json complete_json(const GeneratedPng& png, const std::string& request_id) {
  return {{"request_id", request_id},
          {"seed", png.seed},
          {"width", png.width},
          {"height", png.height},
          {"steps", png.steps},
          {"seconds", png.seconds},
          {"model", png.model},
          {"variant", png.variant},
          {"weights", png.weights},
          {"seeded_weights", png.seeded_weights},
          {"png_bytes", png.png.size()},
          {"png_base64", net::base64_encode(png.png)}};
}

}  // namespace

ApiRoutes::ApiRoutes(GenerationService& service,
                     mold::net::ServerMetrics& metrics, ApiSettings settings)
    : service_(service), metrics_(metrics), settings_(std::move(settings)) {
  heartbeat_ = std::thread([this] { beat(); });
}

ApiRoutes::~ApiRoutes() { stop(); }

void ApiRoutes::stop() {
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    stopping_ = true;
  }
  heartbeat_wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

void ApiRoutes::beat() {
  std::unique_lock<std::mutex> lock(streams_mutex_);
  while (!stopping_) {
    heartbeat_wake_.wait_for(lock, settings_.heartbeat);
    if (stopping_) break;
    std::vector<std::shared_ptr<EventStream>> open;
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (auto stream = it->lock()) {
        open.push_back(std::move(stream));
        ++it;
      } else {
        it = streams_.erase(it);
      }
    }
    lock.unlock();
    for (const auto& stream : open) stream->heartbeat();
    open.clear();
    lock.lock();
  }
}

const std::vector<ApiRoutes::Route>& ApiRoutes::routes() {
  static const std::vector<Route> table = {
      {"/health", "GET", &ApiRoutes::health, false},
      {"/api/status", "GET", &ApiRoutes::status, true},
      {"/api/memory", "GET", &ApiRoutes::memory, true},
      {"/api/models", "GET", &ApiRoutes::models, true},
      {"/api/models/unload", "POST", &ApiRoutes::unload, true},
      {"/api/generate", "POST", &ApiRoutes::generate_png, true},
      {"/api/generate/stream", "POST", &ApiRoutes::generate_stream, true},
      {"/metrics", "GET", &ApiRoutes::metrics, true},
      {"/v1/models", "GET", &ApiRoutes::openai_models, true},
      {"/v1/models/{id}", "GET", &ApiRoutes::openai_model_by_id, true},
      {"/v1/images/generations", "POST", &ApiRoutes::openai_generate, true},
      // The addresses of "url" answers: unguessable, kept an hour, no key.
      {"/v1/images/file", "GET", &ApiRoutes::openai_image_file, false},
  };
  return table;
}

std::vector<std::string> ApiRoutes::route_names() {
  std::vector<std::string> names;
  for (const auto& route : routes())
    names.push_back(std::string(route.method) + " " + route.path);
  return names;
}

bool ApiRoutes::Route::matches(const std::string& request_path) const {
  // "/v1/models/{id}": the prefix, then one segment that is not empty.
  const std::string_view own(path);
  const auto slot = own.find('{');
  if (slot == std::string_view::npos) return request_path == own;
  const std::string_view prefix = own.substr(0, slot);
  return request_path.size() > prefix.size() &&
         mold::starts_with(request_path, prefix) &&
         request_path.find('/', prefix.size()) == std::string::npos;
}

const ApiRoutes::Route* ApiRoutes::route_for(const std::string& path) {
  for (const auto& route : routes())
    if (route.matches(path)) return &route;
  return nullptr;
}

std::string ApiRoutes::route_of(const std::string& path) {
  const Route* route = route_for(path);
  return route ? route->path : "other";
}

bool ApiRoutes::authorized(const net::HttpRequest& request,
                           const Channel& channel, Dialect dialect) const {
  if (settings_.token.empty()) return true;
  std::string given = request.header("X-Api-Key");
  const std::string auth = request.header("Authorization");
  // The scheme is case-insensitive (RFC 9110 section 11.1).
  if (given.empty() && auth.size() > 7 &&
      mold::ascii_lower(auth.substr(0, 7)) == "bearer ")
    given = auth.substr(7);
  if (same_secret(given, settings_.token)) return true;
  ApiFailure refused = api_failure(
      codes::kUnauthorized,
      given.empty() ? "this server needs an API key: send it as "
                      "\"Authorization: Bearer KEY\" or \"X-Api-Key: "
                      "KEY\" (mold run reads MOLD_API_KEY)"
                    : "the API key is not this server's");
  refused.headers = {{"WWW-Authenticate", "Bearer"}};
  channel->send(failure_response(refused, dialect));
  return false;
}

void ApiRoutes::handle(net::HttpRequest request, Channel channel) {
  // The OpenAI-compatible routes answer errors in OpenAI's shape.
  const Dialect dialect =
      request.path.rfind("/v1/", 0) == 0 ? Dialect::openai : Dialect::mold;
  const auto refuse =
      [&](std::string_view code, std::string message,
          std::vector<std::pair<std::string, std::string>> headers = {},
          std::string field = {}) {
        ApiFailure failure = api_failure(code, std::move(message));
        failure.headers = std::move(headers);
        failure.field = std::move(field);
        channel->send(failure_response(failure, dialect));
      };
  const Route* route = route_for(request.path);
  if (!route) {
    refuse(codes::kNotFound,
           fmt::format("no route {} {}; the routes are in docs/http-api.md "
                       "(GET /api/status, POST /api/generate, POST "
                       "/v1/images/generations, ...)",
                       mold::shown_value(request.method),
                       mold::shown_value(request.path)));
    return;
  }
  const bool get_like = request.method == "GET" || request.method == "HEAD";
  if (std::string(route->method) == "GET" ? !get_like
                                          : request.method != route->method) {
    refuse(codes::kMethodNotAllowed,
           fmt::format("{} takes {}, not {}", route->path, route->method,
                       mold::shown_value(request.method)),
           {{"Allow", route->method}});
    return;
  }
  if (route->needs_key && !authorized(request, channel, dialect)) return;
  try {
    (this->*route->handler)(request, channel);
  } catch (const Refused& refused) {
    refuse(refused.code, refused.message, {}, refused.field);
  } catch (...) {
    mold::tools::FailureContext context;
    context.backend = service_.backend_name();
    context.device = service_.device_name();
    ApiFailure failure = current_failure(context);
    if (failure.code == codes::kInferenceError)
      failure.code = std::string(codes::kInternalError);  // not a generation
    channel->send(failure_response(failure, dialect));
  }
}

void ApiRoutes::health(const net::HttpRequest&, Channel channel) {
  const bool draining = draining_;
  channel->send(json_response(
      {{"status", draining ? "draining" : "ok"}, {"version", MOLD_VERSION}},
      draining ? 503 : 200));
}

void ApiRoutes::status(const net::HttpRequest&, Channel channel) {
  channel->send(json_response(service_.status()));
}

void ApiRoutes::memory(const net::HttpRequest&, Channel channel) {
  channel->send(json_response(service_.memory()));
}

void ApiRoutes::models(const net::HttpRequest&, Channel channel) {
  channel->send(json_response(service_.models()));
}

void ApiRoutes::metrics(const net::HttpRequest&, Channel channel) {
  service_.refresh_metrics();
  net::HttpResponse r;
  r.content_type = net::ServerMetrics::kContentType;
  r.body = metrics_.serialize();
  channel->send(std::move(r));
}

void ApiRoutes::generate_png(const net::HttpRequest& request, Channel channel) {
  generate(request, std::move(channel), false);
}

void ApiRoutes::generate_stream(const net::HttpRequest& request,
                                Channel channel) {
  generate(request, std::move(channel), true);
}

void ApiRoutes::unload(const net::HttpRequest& request, Channel channel) {
  const Json body = parse_body(request, true);
  if (!body.is_object())
    throw Refused{codes::kValidationError, "the body should be a JSON object"};
  for (const auto& item : body.items())
    if (item.key() != "model")
      invalid(mold::shown_value(item.key()),
              "is not a field of an unload request (model)");
  const std::string model = string_field(body, "model", false, 256);
  service_.unload(model, [channel](std::optional<Json> done,
                                   std::optional<ApiFailure> failure) {
    if (failure)
      channel->send(failure_response(*failure));
    else
      channel->send(json_response(*done));
  });
}

void ApiRoutes::generate(const net::HttpRequest& request, Channel channel,
                         bool stream) {
  if (draining_) {
    channel->send(failure_response(shutting_down()));
    return;
  }
  GenerationRequest parsed =
      parse_generation(parse_body(request, false), settings_.max_prompt_bytes);
  const std::string host = request.header("Host");
  JobCallbacks callbacks;
  callbacks.wanted = [channel] { return channel->open(); };
  callbacks.watch_gone = [channel](std::function<void()> gone) {
    channel->on_close(std::move(gone));
  };
  const std::string id = request.request_id;
  if (stream) {
    auto events = std::make_shared<EventStream>();
    events->channel = channel;
    events->request_id = id;
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      streams_.push_back(events);
    }
    const std::uint64_t seed = parsed.generate.seed;
    callbacks.on_queued = [events](int position) {
      events->event("progress", {{"kind", "queue"}, {"position", position}});
    };
    callbacks.on_start = [events, seed] {
      events->event("progress", {{"kind", "start"},
                                 {"request_id", events->request_id},
                                 {"seed", seed}});
    };
    callbacks.on_phase = [events](const mold::PhaseEvent& e) {
      events->event("progress",
                    {{"kind", "phase"},
                     {"event", Json::parse(mold::phase_event_json(e))}});
    };
    callbacks.on_done = [events](std::optional<GeneratedPng> png,
                                 std::optional<ApiFailure> failure) {
      std::lock_guard<std::mutex> lock(events->mutex);
      if (failure && !events->begun) {
        // Nothing sent yet: a real status, so a proxy may try elsewhere.
        events->channel->send(failure_response(*failure));
        return;
      }
      events->begin_locked();
      const Json data =
          png ? complete_json(*png, events->request_id)
              : net::error_body(failure->code, failure->message, failure->oom);
      events->channel->write(net::format_sse(
          png ? "complete" : "error",
          data.dump(-1, ' ', false, Json::error_handler_t::replace)));
      events->channel->end_stream();
      events->ended = true;
    };
  } else {
    callbacks.on_done = [channel](std::optional<GeneratedPng> png,
                                  std::optional<ApiFailure> failure) {
      if (failure) {
        channel->send(failure_response(*failure));
        return;
      }
      net::HttpResponse r;
      r.content_type = "image/png";
      r.headers = {
          {"x-mold-seed-used", std::to_string(png->seed)},
          {"x-mold-model", png->model + ":" + png->variant},
          {"x-mold-seeded-weights", png->seeded_weights ? "true" : "false"},
          {"x-mold-seconds", fmt::format("{:.3f}", png->seconds)}};
      r.body = std::move(png->png);
      channel->send(std::move(r));
    };
  }
  if (auto refused =
          service_.submit(std::move(parsed), id, host, std::move(callbacks)))
    channel->send(failure_response(*refused));
}

namespace {

/// The answers to one images request's jobs, gathered until all are done;
/// the first failure answers at once and stops the rest.
struct OpenAiBatch {
  std::shared_ptr<net::ResponseChannel> channel;
  std::mutex mutex;
  std::vector<std::optional<GeneratedPng>> pngs;
  std::size_t done = 0;
  bool failed = false;

  bool wanted() {
    std::lock_guard<std::mutex> lock(mutex);
    return !failed && channel->open();
  }
  /// The answer when this was the last image; nothing otherwise.
  std::optional<std::vector<GeneratedPng>> finish(
      std::size_t index, std::optional<GeneratedPng> png,
      const std::optional<ApiFailure>& failure) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed) return std::nullopt;
    if (failure) {
      failed = true;
      channel->send(failure_response(*failure, Dialect::openai));
      return std::nullopt;
    }
    pngs[index] = std::move(png);
    if (++done < pngs.size()) return std::nullopt;
    std::vector<GeneratedPng> all;
    for (auto& each : pngs) all.push_back(std::move(*each));
    return all;
  }
};

/// "http://HOST" (https behind a proxy that says so), or nothing when the
/// Host header is not one an address can hold.
std::optional<std::string> base_address(const net::HttpRequest& request) {
  const std::string host = request.header("Host");
  if (host.empty() || host.size() > 255 ||
      !std::all_of(host.begin(), host.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
               c == '-' || c == ':' || c == '[' || c == ']';
      }))
    return std::nullopt;
  const bool https =
      mold::ascii_lower(request.header("X-Forwarded-Proto")) == "https";
  return (https ? "https://" : "http://") + host;
}

/// The answer to an images request: its images as base64, or kept in
/// `store` and given by address under `base` (response_format "url").
net::HttpResponse images_response(std::vector<GeneratedPng>& all,
                                  const std::optional<std::string>& base,
                                  ImageStore& store) {
  std::vector<OpenAiImage> images;
  std::string seeds;
  for (auto& each : all) {
    seeds += (seeds.empty() ? "" : ",") + std::to_string(each.seed);
    OpenAiImage image;
    if (base)
      image.url =
          *base + "/v1/images/file?id=" + store.put(std::move(each.png));
    else
      image.b64_json = net::base64_encode(each.png);
    images.push_back(std::move(image));
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  net::HttpResponse r = json_response(openai_images_answer(
      created, images, all.front().width, all.front().height));
  r.headers = {{"x-mold-seeds", seeds},
               {"x-mold-model", all.front().model + ":" + all.front().variant}};
  return r;
}

}  // namespace

void ApiRoutes::openai_generate(const net::HttpRequest& request,
                                Channel channel) {
  if (draining_) {
    channel->send(failure_response(shutting_down(), Dialect::openai));
    return;
  }
  OpenAiImagesRequest openai;
  try {
    openai = read_openai_images(parse_body(request, false));
  } catch (const OpenAiFieldError& e) {
    throw Refused{codes::kValidationError, e.what(), e.field()};
  }
  // The images of a request wait behind the first, all at once or none.
  if (const std::size_t room = service_.queue_capacity() + 1;
      std::size_t(openai.n) > room)
    invalid("n", fmt::format("{} images in one request: this server runs one "
                             "and queues at most {} behind it (mold serve "
                             "--queue {}), so it takes at most {} a request; "
                             "ask for {} or fewer, or send several requests",
                             openai.n, room - 1, room - 1, room, room));
  std::optional<std::string> base;
  if (openai.urls && !(base = base_address(request)))
    invalid("response_format",
            "\"url\" builds the address from the request's Host header, "
            "which is missing or not a host name; send one, or ask for "
            "\"b64_json\"");
  GenerationRequest first;
  try {
    first = parse_generation(openai.generate, settings_.max_prompt_bytes);
  } catch (Refused& refused) {
    refused.message = openai_message(openai.size, std::move(refused.message));
    throw;
  }
  const std::uint64_t seed = first.generate.seed;
  if (seed > std::numeric_limits<std::uint64_t>::max() - (openai.n - 1))
    invalid("seed", fmt::format("{} with n {}: the last image's seed would "
                                "pass 2^64 - 1; give a smaller seed",
                                seed, openai.n));
  auto batch = std::make_shared<OpenAiBatch>();
  batch->channel = channel;
  batch->pngs.resize(openai.n);
  std::vector<Submission> submissions;
  for (int i = 0; i < openai.n; ++i) {
    Submission submission{first, {}};
    submission.request.generate.seed = seed + std::uint64_t(i);
    JobCallbacks& callbacks = submission.callbacks;
    callbacks.wanted = [batch] { return batch->wanted(); };
    callbacks.client_left = [batch] { return !batch->channel->open(); };
    if (i == 0)
      callbacks.watch_gone = [channel](std::function<void()> gone) {
        channel->on_close(std::move(gone));
      };
    callbacks.on_done = [store = images_, batch, i, base, size = openai.size](
                            std::optional<GeneratedPng> png,
                            std::optional<ApiFailure> failure) {
      if (failure)
        failure->message = openai_message(size, std::move(failure->message));
      auto all = batch->finish(std::size_t(i), std::move(png), failure);
      if (all) batch->channel->send(images_response(*all, base, *store));
    };
    submissions.push_back(std::move(submission));
  }
  if (auto refused = service_.submit_all(
          std::move(submissions), request.request_id, request.header("Host")))
    channel->send(failure_response(*refused, Dialect::openai));
}

void ApiRoutes::openai_models(const net::HttpRequest&, Channel channel) {
  channel->send(json_response(openai_model_list(service_.served_models())));
}

void ApiRoutes::openai_model_by_id(const net::HttpRequest& request,
                                   Channel channel) {
  // The id is the path's last segment, percent-encoded by the clients
  // ("qwen-image-edit-2511%3Aq4").
  const std::string segment = request.path.substr(request.path.rfind('/') + 1);
  const auto id = net::percent_decoded(segment);
  const auto served = service_.served_models();
  const auto found = id ? find_served(served, *id) : std::nullopt;
  if (!found) {
    std::vector<std::string> ids;
    for (const auto& model : served) ids.push_back(model.id);
    throw Refused{codes::kModelNotFound,
                  fmt::format("this server runs no model \"{}\"; it runs "
                              "{} (GET /v1/models lists them)",
                              mold::shown_value(id ? *id : segment),
                              ids.empty() ? "none (no weights were found)"
                                          : mold::join_names(ids))};
  }
  channel->send(json_response(openai_model(*found)));
}

void ApiRoutes::openai_image_file(const net::HttpRequest& request,
                                  Channel channel) {
  // Read as a query: a proxy's or CDN's own parameters may come along.
  std::optional<std::string> png;
  if (const auto id = net::query_parameter(request.query, "id"))
    png = images_->get(*id);
  if (!png)
    throw Refused{codes::kNotFound,
                  "no image at this address: an image's address works for "
                  "an hour, while the server keeps its last 64 (256 MiB); "
                  "ask for b64_json to get the image in the answer"};
  net::HttpResponse r;
  r.content_type = "image/png";
  r.headers = {{"Cache-Control", "private, max-age=3600"}};
  r.body = std::move(*png);
  channel->send(std::move(r));
}

}  // namespace mold_cli
