#pragma once
/// What mold's HTTP server hands a route and what the route answers:
/// plain structs (no Beast types), so routes and tests never include Beast.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mold::net {

/// One request, fully read (its body within the server's limit).
struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: "/api/status?x=1"
  std::string path;    ///< the target without its query: "/api/status"
  std::string query;   ///< after '?', "" when none
  /// Header fields as received (names as sent; look up with header()).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string remote;      ///< "127.0.0.1:53422"
  std::string request_id;  ///< the X-Request-ID of the response

  /// The first field named `name` (case-insensitive); "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// For an error: "CODE: message", which the access log's `error` field
  /// carries (error_response() sets it).
  std::string error;
};

/// How a route answers: once with send(), or as a stream (server-sent
/// events): begin_stream(), write() any number of times, end_stream().
/// Thread-safe: a device job on another thread writes its events here. Writes
/// never block: they are queued for the connection, which drops the client
/// (and makes open() false) when it stops reading and the queue grows past
/// the server's limit. After the client went away every call is a no-op.
class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  /// The whole response. Ignored after the first send() or begin_stream().
  virtual void send(HttpResponse response) = 0;
  /// Starts a chunked response with `status`, `content_type` and `headers`.
  virtual void begin_stream(
      int status, std::string content_type,
      std::vector<std::pair<std::string, std::string>> headers) = 0;
  /// One piece of the stream.
  virtual void write(std::string data) = 0;
  /// Ends the stream (the connection then reads the next request).
  virtual void end_stream() = 0;
  /// False once the client disconnected or was dropped.
  virtual bool open() const = 0;
  /// Calls `gone` once when the client disconnects or is dropped (on the
  /// server's I/O thread; at once, on this thread, if it already has). One
  /// callback per connection: a later call replaces an earlier one.
  virtual void on_close(std::function<void()> gone) = 0;
};

/// "OK", "Not Found", ...: the reason phrase of `status`.
std::string_view status_reason(int status);

}  // namespace mold::net
