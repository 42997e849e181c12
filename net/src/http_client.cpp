#include "mold/net/http_client.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <optional>

namespace mold::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string ClientResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (beast::iequals(key, beast::string_view(name.data(), name.size())))
      return value;
  return {};
}

namespace {

/// Runs one asynchronous operation to its end on `io`.
template <class Start>
beast::error_code run_op(asio::io_context& io, Start&& start) {
  beast::error_code result;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run();
  return result;
}

class Connection {
 public:
  Connection(const ServerAddress& address, const ClientOptions& options)
      : address_(address), options_(options), stream_(io_) {}

  [[noreturn]] void fail(const std::string& doing, beast::error_code ec) {
    std::string why = ec == beast::error::timeout ? "timed out" : ec.message();
    throw ConnectionError(fmt::format("cannot {} the mold server at {}: {}",
                                      doing, address_.display(), why));
  }

  void connect() {
    tcp::resolver resolver(io_);
    tcp::resolver::results_type endpoints;
    asio::steady_timer timer(io_);
    timer.expires_after(options_.connect_timeout);
    timer.async_wait([&](beast::error_code ec) {
      if (!ec) resolver.cancel();
    });
    beast::error_code ec = run_op(io_, [&](auto handler) {
      resolver.async_resolve(
          address_.host, std::to_string(address_.port),
          [&, handler](beast::error_code e,
                       tcp::resolver::results_type r) mutable {
            timer.cancel();
            endpoints = std::move(r);
            handler(e);
          });
    });
    if (ec == asio::error::operation_aborted) ec = beast::error::timeout;
    if (ec) fail("find", ec);
    stream_.expires_after(options_.connect_timeout);
    ec = run_op(
        io_, [&](auto handler) { stream_.async_connect(endpoints, handler); });
    if (ec) fail("connect to", ec);
  }

  void send(std::string_view method, std::string_view target,
            const std::string& body, std::string_view content_type,
            const std::vector<std::pair<std::string, std::string>>& headers) {
    http::request<http::string_body> request;
    request.method_string(beast::string_view(method.data(), method.size()));
    const std::string full = address_.base_path + std::string(target);
    request.target(full);
    request.version(11);
    request.set(http::field::host, address_.display());
    if (!options_.user_agent.empty())
      request.set(http::field::user_agent, options_.user_agent);
    if (!options_.api_key.empty())
      request.set(http::field::authorization, "Bearer " + options_.api_key);
    for (const auto& [name, value] : headers) request.set(name, value);
    request.set(http::field::connection, "close");
    if (!body.empty() || method == "POST" || method == "PUT") {
      request.set(http::field::content_type,
                  beast::string_view(content_type.data(), content_type.size()));
      request.body() = body;
      request.prepare_payload();
    }
    stream_.expires_after(options_.read_timeout);
    const beast::error_code ec = run_op(io_, [&](auto handler) {
      http::async_write(stream_, request, handler);
    });
    if (ec) fail("send a request to", ec);
  }

  ClientResponse read(const std::function<void(const ClientResponse&)>* on_head,
                      const std::function<void(std::string_view)>* on_data) {
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(options_.max_body);
    stream_.expires_after(options_.read_timeout);
    beast::error_code ec = run_op(io_, [&](auto handler) {
      http::async_read_header(stream_, buffer_, parser, handler);
    });
    if (ec) fail("read the answer of", ec);
    ClientResponse response;
    response.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get())
      response.headers.emplace_back(std::string(field.name_string()),
                                    std::string(field.value()));
    if (on_head) (*on_head)(response);
    std::array<char, 65536> chunk;
    // read_some: the body as it arrives (a stream's events and heartbeats, each
    // restarting the read timeout), not once 64 KiB of it or the end came.
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      stream_.expires_after(options_.read_timeout);
      ec = run_op(io_, [&](auto handler) {
        http::async_read_some(stream_, buffer_, parser, handler);
      });
      if (ec == http::error::need_buffer) ec = {};
      if (ec == http::error::body_limit)
        throw ConnectionError(fmt::format(
            "the answer of the mold server at {} is larger than {} bytes",
            address_.display(), options_.max_body));
      if (ec) fail("read the answer of", ec);
      const std::size_t got = chunk.size() - parser.get().body().size;
      const std::string_view data(chunk.data(), got);
      if (got == 0) continue;
      if (on_data)
        (*on_data)(data);
      else
        response.body.append(data);
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return response;
  }

 private:
  const ServerAddress& address_;
  const ClientOptions& options_;
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

}  // namespace

HttpClient::HttpClient(ServerAddress address, ClientOptions options)
    : address_(std::move(address)), options_(std::move(options)) {}

ClientResponse HttpClient::request(
    std::string_view method, std::string_view target, const std::string& body,
    std::string_view content_type,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  Connection connection(address_, options_);
  connection.connect();
  connection.send(method, target, body, content_type, headers);
  return connection.read(nullptr, nullptr);
}

ClientResponse HttpClient::stream(
    std::string_view method, std::string_view target, const std::string& body,
    std::string_view content_type,
    const std::function<void(const ClientResponse&)>& on_head,
    const std::function<void(std::string_view)>& on_data,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  Connection connection(address_, options_);
  connection.connect();
  connection.send(method, target, body, content_type, headers);
  return connection.read(&on_head, &on_data);
}

}  // namespace mold::net
