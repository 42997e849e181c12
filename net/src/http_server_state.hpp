#pragma once
// HttpServer's shared state (private to net/): its options, I/O context,
// acceptor and threads, and the set of open connections (http_session.hpp),
// which hold a pointer to it while they live.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mold/net/http_server.hpp"

namespace mold::net {

class HttpSession;

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  ServerOptions options;
  RequestHandler handler;
  // Handlers still pending at the end (a lingering close's timer) hold their
  // connections; they are destroyed with the context, when this state is.
  std::unique_ptr<boost::asio::io_context> io =
      std::make_unique<boost::asio::io_context>();
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::optional<
      boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      work;
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> open_connections{0};
  std::atomic<std::size_t> bodies_in_flight{0};  // bytes reserved by bodies
  unsigned short bound_port = 0;
  std::string bound_address;

  std::mutex sessions_mutex;
  std::set<std::shared_ptr<HttpSession>> sessions;

  std::mutex id_mutex;
  std::mt19937_64 id_random{std::random_device{}()};

  std::string next_request_id() {
    std::lock_guard<std::mutex> lock(id_mutex);
    return fmt::format("{:016x}", id_random());
  }

  void accept();
  void remove(const std::shared_ptr<HttpSession>& session);

  /// A descriptor held in reserve: when accept fails for want of
  /// descriptors, it is given up to accept the waiting client, answer it 503
  /// and close it, instead of leaving it hanging in the backlog.
  int spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ~State() {
    if (spare_fd >= 0) ::close(spare_fd);
  }
  void refuse_without_descriptors();
};

}  // namespace mold::net
