#include "mold/net/http_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <mold/base/error.hpp>
#include <mutex>
#include <thread>

#include "http_server_state.hpp"
#include "http_session.hpp"
#include "mold/net/api_error.hpp"

namespace mold::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

void HttpServer::State::refuse_without_descriptors() {
  if (spare_fd < 0) return;
  ::close(spare_fd);
  spare_fd = -1;
  const int client =
      ::accept4(acceptor->native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
  if (client >= 0) {
    const HttpResponse r = error_response(
        codes::kTooManyConnections,
        "the server has no file descriptors left for another connection; "
        "retry shortly",
        std::nullopt, {{"Retry-After", "1"}});
    std::string text = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
        "application/json\r\nRetry-After: 1\r\nConnection: "
        "close\r\nContent-Length: {}\r\n\r\n{}",
        r.body.size(), r.body);
    // Best effort, never blocking: the client is closed either way.
    (void)::send(client, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(client);
  }
  spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void HttpServer::State::accept() {
  acceptor->async_accept(
      asio::make_strand(*io),
      [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
        if (self->stopped) return;
        if (!ec) {
          auto session = HttpSession::create(std::move(socket), self.get());
          bool refuse = false;
          {
            std::lock_guard<std::mutex> lock(self->sessions_mutex);
            refuse = self->sessions.size() >= self->options.max_connections;
            self->sessions.insert(session);
            self->open_connections = self->sessions.size();
          }
          if (refuse)
            session->refuse();
          else
            session->start();
        } else if (ec == asio::error::operation_aborted) {
          return;
        } else if (ec == asio::error::no_descriptors ||
                   ec == asio::error::no_buffer_space) {
          self->refuse_without_descriptors();
        }
        // Errors such as "too many open files" pass: keep accepting, after
        // a pause so a persistent error does not spin.
        if (ec) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        self->accept();
      });
}

void HttpServer::State::remove(const std::shared_ptr<HttpSession>& session) {
  std::lock_guard<std::mutex> lock(sessions_mutex);
  sessions.erase(session);
  open_connections = sessions.size();
}

HttpServer::HttpServer(ServerOptions options, RequestHandler handler)
    : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  state_->handler = std::move(handler);
  if (state_->options.threads < 1) state_->options.threads = 1;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  State& s = *state_;
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(s.options.bind, ec);
  if (ec)
    throw Error(fmt::format(
        "--bind {}: not an IP address ({}); give one such as 127.0.0.1, "
        "0.0.0.0 or ::1",
        s.options.bind, ec.message()));
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.emplace(*s.io);
  auto fail = [&](const char* what) {
    throw Error(fmt::format(
        "cannot {} {}:{}: {}{}", what, s.options.bind, s.options.port,
        ec.message(),
        ec == asio::error::address_in_use
            ? " (another server runs there: stop it or give another --port)"
        : ec == boost::system::errc::address_not_available
            ? " (not an address of this machine: check --bind)"
        : ec == asio::error::access_denied
            ? " (ports below 1024 need privileges: give --port 7680)"
            : ""));
  };
  s.acceptor->open(endpoint.protocol(), ec);
  if (ec) fail("open a socket for");
  s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  s.acceptor->bind(endpoint, ec);
  if (ec) fail("listen on");
  s.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("listen on");
  const tcp::endpoint local = s.acceptor->local_endpoint(ec);
  s.bound_port = local.port();
  s.bound_address = local.address().to_string();
  s.work.emplace(asio::make_work_guard(*s.io));
  s.accept();
  for (int i = 0; i < s.options.threads; ++i)
    s.threads.emplace_back([state = state_] { state->io->run(); });
}

unsigned short HttpServer::port() const { return state_->bound_port; }

std::string HttpServer::endpoint() const {
  const std::string& a = state_->bound_address;
  return a.find(':') != std::string::npos
             ? fmt::format("[{}]:{}", a, state_->bound_port)
             : fmt::format("{}:{}", a, state_->bound_port);
}

void HttpServer::stop() {
  State& s = *state_;
  if (s.stopped.exchange(true)) return;
  if (s.acceptor)
    asio::post(*s.io, [state = state_] {
      beast::error_code ec;
      state->acceptor->close(ec);
    });
  std::vector<std::shared_ptr<HttpSession>> open;
  {
    std::lock_guard<std::mutex> lock(s.sessions_mutex);
    open.assign(s.sessions.begin(), s.sessions.end());
  }
  for (const auto& session : open) session->close_from_outside();
  s.work.reset();
  // Connections close on their strands; give them a moment, then stop.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(s.sessions_mutex);
      if (s.sessions.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.io->stop();
  for (auto& t : s.threads)
    if (t.joinable()) t.join();
  s.threads.clear();
  // No I/O thread runs now: close the listening socket for sure (the posted
  // close may not have run), then let the aborted operations finish so that
  // their handlers let go of the state.
  beast::error_code ec;
  if (s.acceptor) s.acceptor->close(ec);
  s.io->restart();
  s.io->poll();
  std::lock_guard<std::mutex> lock(s.sessions_mutex);
  s.sessions.clear();
}

std::size_t HttpServer::connections() const {
  return state_->open_connections.load();
}

std::size_t HttpServer::bodies_in_flight() const {
  return state_->bodies_in_flight.load();
}

}  // namespace mold::net
