#pragma once
// One connection of HttpServer (private to net/): reads a request, lets the
// handler answer through a channel, writes the answer, then reads the next
// request or closes. The server holds it in its set of connections; it
// removes itself from there when it closes.

#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "http_server_state.hpp"

namespace mold::net {

class HttpSession {
 public:
  /// A connection on `socket`; `server` outlives it (connections are owned
  /// by the server's I/O context and its set of connections).
  static std::shared_ptr<HttpSession> create(
      boost::asio::ip::tcp::socket socket, HttpServer::State* server);
  virtual ~HttpSession() = default;
  /// Reads the first request.
  virtual void start() = 0;
  /// Refuses the connection: the server has too many.
  virtual void refuse() = 0;
  /// Closes it from another thread (the server stops).
  virtual void close_from_outside() = 0;
};

}  // namespace mold::net
