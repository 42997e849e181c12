#pragma once
// mold serve's routes (docs/http-api.md): one table of path, method and
// handler; authentication, request parsing and validation, and the answers.
// Every failure of a handler is answered through one map (api_failure.hpp);
// the device work is GenerationService's.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mold/net/http_message.hpp>
#include <mold/net/server_metrics.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "generation_service.hpp"
#include "image_store.hpp"

namespace mold_cli {

struct ApiSettings {
  std::string token;  ///< required from clients when not empty
  std::size_t max_prompt_bytes = 64 << 10;
  /// A comment line on every open event stream this often, so that clients
  /// and proxies waiting through a long phase see the connection alive.
  std::chrono::milliseconds heartbeat{15000};
};

struct EventStream;

/// mold's own routes answer errors as {"error", "code"}; the /v1/ routes
/// (OpenAI-compatible) in OpenAI's shape (openai_images.hpp).
enum class Dialect { mold, openai };

class ApiRoutes {
 public:
  ApiRoutes(GenerationService& service, mold::net::ServerMetrics& metrics,
            ApiSettings settings);
  ~ApiRoutes();  ///< stop()
  /// Stops the heartbeat (before the server goes: it writes to streams).
  void stop();

  void handle(mold::net::HttpRequest request,
              std::shared_ptr<mold::net::ResponseChannel> channel);

  /// The route a path belongs to, as metrics label it ("other" for unknown
  /// paths: labels stay bounded).
  static std::string route_of(const std::string& path);
  /// Every route as "METHOD PATH" ("GET /health"), in the table's order (a
  /// test checks docs/http-api.md's headings against them).
  static std::vector<std::string> route_names();

  /// Health answers 503 "draining" from now on.
  void set_draining() { draining_ = true; }

 private:
  using Channel = std::shared_ptr<mold::net::ResponseChannel>;
  /// A route: its path, its method (GET also answers HEAD), its handler, and
  /// whether it needs the API key.
  struct Route {
    const char* path;  ///< "/api/status"; "/v1/models/{id}": one more segment
    const char* method;
    void (ApiRoutes::*handler)(const mold::net::HttpRequest&, Channel);
    bool needs_key;
    bool matches(const std::string& request_path) const;
  };
  static const std::vector<Route>& routes();
  static const Route* route_for(const std::string& path);  ///< null: none

  void health(const mold::net::HttpRequest& request, Channel channel);
  void status(const mold::net::HttpRequest& request, Channel channel);
  void memory(const mold::net::HttpRequest& request, Channel channel);
  void models(const mold::net::HttpRequest& request, Channel channel);
  void metrics(const mold::net::HttpRequest& request, Channel channel);
  void unload(const mold::net::HttpRequest& request, Channel channel);
  void generate_png(const mold::net::HttpRequest& request, Channel channel);
  void generate_stream(const mold::net::HttpRequest& request, Channel channel);
  void generate(const mold::net::HttpRequest& request, Channel channel,
                bool stream);
  /// POST /v1/images/generations: n images on the same queue and admission.
  void openai_generate(const mold::net::HttpRequest& request, Channel channel);
  /// GET /v1/models: the models this server runs, in OpenAI's shape.
  void openai_models(const mold::net::HttpRequest& request, Channel channel);
  /// GET /v1/models/{id}: one of them, or 404 model_not_found.
  void openai_model_by_id(const mold::net::HttpRequest& request,
                          Channel channel);
  /// GET /v1/images/file?id=: an image answered by address.
  void openai_image_file(const mold::net::HttpRequest& request,
                         Channel channel);
  bool authorized(const mold::net::HttpRequest& request, const Channel& channel,
                  Dialect dialect) const;

  GenerationService& service_;
  mold::net::ServerMetrics& metrics_;
  ApiSettings settings_;
  std::atomic<bool> draining_{false};
  /// The "url" answers' images (shared with the jobs' callbacks, which may
  /// end after the routes).
  std::shared_ptr<ImageStore> images_ = std::make_shared<ImageStore>();

  void beat();
  std::mutex streams_mutex_;
  std::condition_variable heartbeat_wake_;
  bool stopping_ = false;
  std::vector<std::weak_ptr<EventStream>> streams_;
  std::thread heartbeat_;
};

}  // namespace mold_cli
