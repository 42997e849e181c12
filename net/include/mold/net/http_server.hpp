#pragma once
/// mold's HTTP/1.1 server (Boost.Beast on Asio): reads each request whole
/// within its limits and timeouts, hands it to one handler with a
/// ResponseChannel, and writes what the handler answers, a response or a
/// stream (server-sent events). Requests the server itself refuses (too
/// large, malformed, too slow, too many connections) get a JSON error of
/// mold/net/api_error.hpp and the connection is closed. Every response
/// carries X-Request-ID; every request ends in one log entry.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "mold/net/http_message.hpp"

namespace mold::net {

/// One finished request, for the structured log and the metrics.
struct RequestLogEntry {
  std::string request_id;
  std::string method;
  std::string path;  ///< "" when the request could not be read
  std::string remote;
  int status = 0;
  double seconds = 0;        ///< from the request's last byte to its response's
  std::size_t bytes_in = 0;  ///< body bytes received
  std::size_t bytes_out = 0;  ///< bytes written, headers included
  bool stream = false;        ///< an event stream
  std::string error;          ///< why the server refused it or dropped it
};

struct ServerOptions {
  std::string bind = "127.0.0.1";
  unsigned short port = 7680;  ///< 0: any free port (see HttpServer::port)
  std::size_t max_body = std::size_t(64) << 20;  ///< request body bytes
  std::size_t max_header = 16 << 10;  ///< request line and header fields
  /// The most a request may take to arrive, from the connection becoming
  /// idle to its last byte: a client that trickles bytes is cut off.
  std::chrono::milliseconds read_timeout{30000};
  /// The most one write to a client may take.
  std::chrono::milliseconds write_timeout{60000};
  std::size_t max_connections = 1024;  ///< more get 503 TOO_MANY_CONNECTIONS
  /// Request bodies all connections together may be receiving at once
  /// (a body counts from its header, by its Content-Length, or max_body when
  /// chunked, until its handler returns); a body that would pass it gets 503
  /// SERVER_BUSY at once. 0: 8 x max_body.
  std::size_t max_bodies_in_flight = 0;
  /// Bytes a connection may have waiting to be written before the client is
  /// taken to have stopped reading and is dropped.
  std::size_t max_pending_output = std::size_t(256) << 20;
  int threads = 2;  ///< I/O threads (device jobs run elsewhere)
  std::string server_name = "mold";  ///< the Server header
  /// Called once per request, on an I/O thread; must not throw.
  std::function<void(const RequestLogEntry&)> log;
};

/// Called on an I/O thread for every request that was read: answer through
/// `channel`, now or later from any thread. An exception escaping it is
/// answered 500 INTERNAL_ERROR.
using RequestHandler = std::function<void(
    HttpRequest request, std::shared_ptr<ResponseChannel> channel)>;

class HttpServer {
 public:
  HttpServer(ServerOptions options, RequestHandler handler);
  ~HttpServer();  ///< stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds, listens and starts the I/O threads. Throws mold::Error naming the
  /// address and port (in use, not an address of this machine, ...).
  void start();
  /// The port it listens on (the one chosen when options.port was 0).
  unsigned short port() const;
  /// "127.0.0.1:7680".
  std::string endpoint() const;
  /// Stops accepting, closes every connection, joins the I/O threads.
  /// Idempotent; safe from any thread but an I/O thread.
  void stop();
  /// Open connections now.
  std::size_t connections() const;
  /// Request body bytes reserved now (ServerOptions::max_bodies_in_flight).
  std::size_t bodies_in_flight() const;

  struct State;  ///< the implementation's (public only for its connections)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mold::net
