#pragma once
// mold serve's routes (docs/http-api.md): authentication, request parsing and
// validation, and the answers; the device work is GenerationService's.

#include <memory>
#include <mold/net/http_message.hpp>
#include <mold/net/server_metrics.hpp>
#include <string>

#include "generation_service.hpp"

namespace mold_cli {

struct ApiSettings {
  std::string token;  ///< required from clients when not empty
  /// Seconds between heartbeat comments on event streams... see serve.cpp.
  std::size_t max_prompt_bytes = 64 << 10;
};

class ApiRoutes {
 public:
  ApiRoutes(GenerationService& service, mold::net::ServerMetrics& metrics,
            ApiSettings settings);

  void handle(mold::net::HttpRequest request,
              std::shared_ptr<mold::net::ResponseChannel> channel);

  /// The route a path belongs to, as metrics label it ("other" for unknown
  /// paths: labels stay bounded).
  static std::string route_of(const std::string& path);

  /// Health answers 503 "draining" from now on.
  void set_draining() { draining_ = true; }

 private:
  void generate(const mold::net::HttpRequest& request,
                std::shared_ptr<mold::net::ResponseChannel> channel,
                bool stream);
  void unload(const mold::net::HttpRequest& request,
              std::shared_ptr<mold::net::ResponseChannel> channel);

  GenerationService& service_;
  mold::net::ServerMetrics& metrics_;
  ApiSettings settings_;
  std::atomic<bool> draining_{false};
};

}  // namespace mold_cli
