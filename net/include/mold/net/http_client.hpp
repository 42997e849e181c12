#pragma once
/// A small blocking HTTP/1.1 client for mold's API (Boost.Beast): one
/// connection per request, every step under a timeout, a body read whole or
/// handed over piece by piece as it arrives (an event stream).

#include <chrono>
#include <functional>
#include <mold/base/error.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mold/net/server_address.hpp"

namespace mold::net {

/// The server could not be reached, or the connection broke or timed out:
/// nothing the server said. The message names the address and the reason.
class ConnectionError : public Error {
 public:
  using Error::Error;
};

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{10000};
  /// The most the server may stay silent while a response is read (the
  /// server sends a heartbeat on streams every few seconds).
  std::chrono::milliseconds read_timeout{120000};
  std::string api_key;     ///< sent as "Authorization: Bearer KEY" when set
  std::string user_agent;  ///< "mold/0.1.0"
  std::size_t max_body = std::size_t(1) << 30;  ///< bytes of a whole body
};

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  ///< empty for stream()
  std::string header(std::string_view name) const;
};

class HttpClient {
 public:
  HttpClient(ServerAddress address, ClientOptions options = {});

  /// Sends a request (the address's base path before `target`) and reads the
  /// whole response. Throws ConnectionError.
  ClientResponse request(
      std::string_view method, std::string_view target,
      const std::string& body = {},
      std::string_view content_type = "application/json",
      const std::vector<std::pair<std::string, std::string>>& headers = {});

  /// The same, handing the body to `on_data` as it arrives (after `on_head`
  /// saw the status and headers). What the callbacks throw propagates and
  /// closes the connection.
  ClientResponse stream(
      std::string_view method, std::string_view target, const std::string& body,
      std::string_view content_type,
      const std::function<void(const ClientResponse&)>& on_head,
      const std::function<void(std::string_view)>& on_data,
      const std::vector<std::pair<std::string, std::string>>& headers = {});

  const ServerAddress& address() const { return address_; }

 private:
  ServerAddress address_;
  ClientOptions options_;
};

}  // namespace mold::net
