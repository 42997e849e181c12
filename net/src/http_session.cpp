#include "http_session.hpp"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <functional>
#include <mold/base/error.hpp>
#include <mold/base/free_heap.hpp>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "mold/net/api_error.hpp"

namespace mold::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (const char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
          c == '.' || c == ':'))
      return false;
  return true;
}

/// Header values come from routes and clients: never let one end the header.
std::string header_safe(std::string value) {
  for (char& c : value)
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  return value;
}

/// Whether a connection has closed, shared with its channels (which outlive
/// it), and what to call when it does.
struct CloseWatch {
  std::atomic<bool> closed{false};
  std::mutex mutex;
  std::function<void()> gone;

  void watch(std::function<void()> callback) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!closed.load()) {
        gone = std::move(callback);
        return;
      }
    }
    if (callback) callback();
  }
  void close() {
    std::function<void()> callback;
    {
      std::lock_guard<std::mutex> lock(mutex);
      closed.store(true);
      callback = std::move(gone);
      gone = nullptr;
    }
    if (!callback) return;
    try {
      callback();
    } catch (...) {
      // A route's hook must not take the I/O thread down.
    }
  }
};

/// One connection: reads a request, lets the handler answer through a
/// channel, writes the answer (queued, one write at a time), then reads the
/// next request or closes.
class Session final : public HttpSession,
                      public std::enable_shared_from_this<Session> {
 public:
  /// `server` outlives the connection: connections are owned by the
  /// server's I/O context (its pending handlers) and its set of connections.
  Session(tcp::socket socket, HttpServer::State* server)
      : stream_(std::move(socket)),
        server_(server),
        read_timer_(stream_.get_executor()) {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec)
      remote_ = fmt::format("{}:{}", peer.address().to_string(), peer.port());
  }

  void start() override {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this()] { self->read_request(); });
  }

  /// Refuses the connection: the server has too many.
  void refuse() override {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->keep_alive_ = false;
      self->log_.error = "too many connections";
      self->respond(error_response(
          codes::kTooManyConnections,
          fmt::format("the server has {} connections open, its limit "
                      "(--max-connections); retry later",
                      self->server_->options.max_connections),
          std::nullopt, {{"Retry-After", "1"}}));
    });
  }

  /// From any thread: closes now, or once what is being written is written
  /// (an answer already on its way is not cut off).
  void close_from_outside() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->keep_alive_ = false;
      if (!self->writing_ && self->out_.empty()) self->close();
    });
  }

  // The channel's calls, each posted onto the connection's strand; `request`
  // is the number of the request the channel answers (a stale channel of an
  // earlier request is ignored).
  void channel_send(std::uint64_t request, HttpResponse response) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), request,
                                        r = std::move(response)]() mutable {
      if (request != self->request_no_ || self->answered_ || self->closed_)
        return;
      self->respond(std::move(r));
    });
  }
  void channel_begin(std::uint64_t request, int status, std::string type,
                     std::vector<std::pair<std::string, std::string>> headers) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), request,
                                        status, type = std::move(type),
                                        h = std::move(headers)]() mutable {
      if (request != self->request_no_ || self->answered_ || self->closed_)
        return;
      self->answered_ = true;
      self->streaming_ = true;
      self->log_.status = status;
      self->log_.stream = true;
      // HTTP/1.0 has no chunked encoding: the stream ends with the
      // connection instead.
      if (self->http10_) self->keep_alive_ = false;
      std::string head = self->head(status, type, h);
      if (!self->http10_) head += "Transfer-Encoding: chunked\r\n";
      head +=
          "Cache-Control: no-cache\r\n"
          "X-Accel-Buffering: no\r\n\r\n";
      self->enqueue(std::move(head));
    });
  }
  void channel_write(std::uint64_t request, std::string data) {
    if (data.empty()) return;  // an empty chunk would end the stream
    asio::post(stream_.get_executor(), [self = shared_from_this(), request,
                                        d = std::move(data)]() mutable {
      if (request != self->request_no_ || !self->streaming_ || self->closed_)
        return;
      self->enqueue(self->http10_
                        ? std::move(d)
                        : fmt::format("{:x}\r\n", d.size()) + d + "\r\n");
    });
  }
  void channel_end(std::uint64_t request) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), request] {
      if (request != self->request_no_ || !self->streaming_ || self->closed_)
        return;
      self->streaming_ = false;
      self->response_done_ = true;
      // HTTP/1.0: nothing marks the end but the close after it.
      self->enqueue(self->http10_ ? std::string() : "0\r\n\r\n");
    });
  }
  bool is_open() const { return !closed_flag_->closed.load(); }
  std::shared_ptr<CloseWatch> closed_flag() const { return closed_flag_; }
  std::uint64_t request_no() const { return request_no_; }

 private:
  void read_request() {
    if (closed_) return;
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(server_->options.max_header));
    parser_->body_limit(server_->options.max_body);
    answered_ = false;
    response_done_ = false;
    streaming_ = false;
    head_only_ = false;
    log_ = RequestLogEntry();
    request_id_ = server_->next_request_id();
    // A timer of our own, not the stream's expiry: on timeout the read is
    // cancelled but the socket stays open for the 408 answer.
    stream_.expires_never();
    timed_out_ = false;
    read_timer_.expires_after(server_->options.read_timeout);
    read_timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) {
        self->timed_out_ = true;
        beast::error_code ignored;
        self->stream_.socket().cancel(ignored);
      }
    });
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->on_header(ec);
        });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    const auto& header = parser_->get();
    const auto length = parser_->content_length();
    if (length && *length > server_->options.max_body) {
      keep_alive_ = false;
      log_.error = "body too large";
      return respond(error_response(
          codes::kPayloadTooLarge,
          fmt::format("the request body is {} bytes; this server accepts at "
                      "most {} (mold serve --max-body)",
                      *length, server_->options.max_body)));
    }
    // A body is counted against the server's budget from now until its
    // handler returns: many large bodies at once are refused, not held.
    const std::size_t want = length               ? std::size_t(*length)
                             : parser_->chunked() ? server_->options.max_body
                                                  : 0;
    if (want > 0) {
      const std::size_t budget = server_->options.max_bodies_in_flight
                                     ? server_->options.max_bodies_in_flight
                                     : 8 * server_->options.max_body;
      const std::size_t before = server_->bodies_in_flight.fetch_add(want);
      if (before + want > budget) {
        server_->bodies_in_flight.fetch_sub(want);
        keep_alive_ = false;
        log_.error = "bodies in flight over the budget";
        return respond(error_response(
            codes::kServerBusy,
            fmt::format("the server is receiving {} bytes of other requests' "
                        "bodies, its limit ({}); retry in a moment",
                        before, budget),
            std::nullopt, {{"Retry-After", "1"}}));
      }
      reserved_ = want;
    }
    const auto expect = header[http::field::expect];
    if (!expect.empty() && beast::iequals(expect, "100-continue")) {
      // Written directly: nothing else is queued while a request is read.
      continue_ = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(
          stream_, asio::buffer(continue_),
          [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->close();
            self->read_body();
          });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->on_read_error(ec);
          self->on_request();
        });
  }

  void release_body() {
    if (reserved_) server_->bodies_in_flight.fetch_sub(reserved_);
    reserved_ = 0;
  }

  void on_read_error(beast::error_code ec) {
    keep_alive_ = false;
    read_timer_.cancel();
    release_body();
    if (timed_out_) ec = beast::error::timeout;
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted)
      return close();
    const bool partial = parser_ && parser_->got_some();
    if (ec == beast::error::timeout) {
      if (!partial) return close();  // an idle keep-alive connection
      log_.error = "request timeout";
      return respond(error_response(
          codes::kRequestTimeout,
          fmt::format("the request did not arrive within {} s (mold serve "
                      "--read-timeout)",
                      server_->options.read_timeout.count() / 1000.0)));
    }
    if (ec == http::error::body_limit) {
      log_.error = "body too large";
      return respond(error_response(
          codes::kPayloadTooLarge,
          fmt::format("the request body is larger than {} bytes, this "
                      "server's limit (mold serve --max-body)",
                      server_->options.max_body)));
    }
    if (ec == http::error::header_limit) {
      log_.error = "headers too large";
      return respond(error_response(
          codes::kHeadersTooLarge,
          fmt::format("the request line and headers are larger than {} "
                      "bytes, this server's limit",
                      server_->options.max_header)));
    }
    log_.error = "malformed request: " + ec.message();
    respond(error_response(
        codes::kBadRequest,
        fmt::format("malformed HTTP request: {}", ec.message())));
  }

  void on_request() {
    read_timer_.cancel();
    auto message = parser_->release();
    keep_alive_ = message.keep_alive();
    http10_ = message.version() == 10;
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    const auto q = request.target.find('?');
    request.path = request.target.substr(0, q);
    if (q != std::string::npos) request.query = request.target.substr(q + 1);
    for (const auto& field : message)
      request.headers.emplace_back(std::string(field.name_string()),
                                   std::string(field.value()));
    request.body = std::move(message.body());
    request.remote = remote_;
    const std::string given = request.header("X-Request-ID");
    request.request_id =
        valid_request_id(given) ? given : server_->next_request_id();
    head_only_ = request.method == "HEAD";
    request_id_ = request.request_id;
    log_.request_id = request.request_id;
    log_.method = request.method;
    log_.path = request.path;
    log_.remote = remote_;
    log_.bytes_in = request.body.size();
    started_ = Clock::now();
    ++request_no_;

    auto channel = std::make_shared<Channel>(shared_from_this(), request_no_);
    // When the handler returns, the body and what was parsed from it are
    // freed: a large one's heap pages go back, so that many large bodies do
    // not leave the server's resident set higher.
    struct Release {
      Session& session;
      bool large;
      ~Release() {
        session.release_body();
        if (large) give_back_free_heap();
      }
    } release{*this, request.body.size() >= kLargeBody};
    watch_peer();
    try {
      server_->handler(std::move(request), channel);
    } catch (const std::exception& e) {
      channel->send(error_response(
          codes::kInternalError,
          fmt::format("the server failed handling the request: {}", e.what())));
    } catch (...) {
      channel->send(error_response(codes::kInternalError,
                                   "the server failed handling the request"));
    }
  }

  std::string head(
      int status, const std::string& content_type,
      const std::vector<std::pair<std::string, std::string>>& headers) {
    std::string text =
        fmt::format("HTTP/1.1 {} {}\r\n", status, status_reason(status));
    text += fmt::format("Server: {}\r\n", server_->options.server_name);
    if (!content_type.empty())
      text += fmt::format("Content-Type: {}\r\n", header_safe(content_type));
    if (request_id_.empty()) request_id_ = server_->next_request_id();
    text += fmt::format("X-Request-ID: {}\r\n", request_id_);
    for (const auto& [name, value] : headers)
      text += fmt::format("{}: {}\r\n", header_safe(name), header_safe(value));
    text +=
        keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    return text;
  }

  void respond(HttpResponse response) {
    read_timer_.cancel();
    answered_ = true;
    response_done_ = true;
    log_.status = response.status;
    if (log_.error.empty()) log_.error = std::move(response.error);
    std::string text =
        head(response.status, response.content_type, response.headers);
    text += fmt::format("Content-Length: {}\r\n\r\n", response.body.size());
    if (!head_only_) text += response.body;
    enqueue(std::move(text));
  }

  void enqueue(std::string data) {
    if (closed_) return;
    pending_ += data.size();
    log_.bytes_out += data.size();
    if (pending_ > server_->options.max_pending_output) {
      log_.error = "client stopped reading";
      finish_log();
      return close();
    }
    out_.push_back(std::move(data));
    if (!writing_) write_next();
  }

  void write_next() {
    writing_ = true;
    stream_.expires_after(server_->options.write_timeout);
    asio::async_write(
        stream_, asio::buffer(out_.front()),
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->on_written(ec);
        });
  }

  void on_written(beast::error_code ec) {
    writing_ = false;
    if (ec) {
      log_.error = "write failed: " + ec.message();
      finish_log();
      return close();
    }
    pending_ -= out_.front().size();
    out_.pop_front();
    if (!out_.empty()) return write_next();
    stream_.expires_never();
    if (!response_done_) return;  // a stream waiting for its next event
    response_done_ = false;
    finish_log();
    // The next read waits for the watch on the client to end (one read at a
    // time); nothing else is pending on the socket now, so cancel() ends it.
    const Next next = keep_alive_ ? Next::read_request : Next::linger_close;
    if (watching_) {
      after_watch_ = next;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      return;
    }
    continue_with(next);
  }

  enum class Next { nothing, read_request, linger_close };
  void continue_with(Next next) {
    if (next == Next::read_request) return read_request();
    if (next == Next::linger_close) linger_close();
  }

  /// While a request waits for its answer, the socket is read: a client that
  /// closes its connection (or resets it) is gone, so that the channel says so
  /// (ResponseChannel::open) and its job is dropped or stopped. Bytes that
  /// arrive meanwhile (a pipelined request) are kept for the next read, up
  /// to kMaxReadAhead.
  static constexpr std::size_t kMaxReadAhead = 64 << 10;
  /// A body from this size on has the heap's free pages given back after
  /// its handler (give_back_free_heap).
  static constexpr std::size_t kLargeBody = 1 << 20;
  void watch_peer() {
    if (watching_ || closed_ || buffer_.size() >= kMaxReadAhead) return;
    watching_ = true;
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->watching_ = false;
          const Next next = std::exchange(self->after_watch_, Next::nothing);
          if (!ec) {
            self->buffer_.commit(n);
            if (next != Next::nothing) return self->continue_with(next);
            return self->watch_peer();
          }
          if (ec == asio::error::operation_aborted)
            return self->continue_with(next);
          // End of stream or a reset while the answer was pending.
          if (self->log_.error.empty())
            self->log_.error = "client disconnected before its answer";
          self->close();
        });
  }

  void finish_log() {
    if (logged_for_ == request_no_ + 1 || !server_->options.log) return;
    logged_for_ = request_no_ + 1;
    log_.request_id = request_id_;
    if (log_.remote.empty()) log_.remote = remote_;
    log_.seconds =
        started_.time_since_epoch().count() == 0
            ? 0
            : std::chrono::duration<double>(Clock::now() - started_).count();
    try {
      server_->options.log(log_);
    } catch (...) {
    }
  }

  /// Half-closes, then reads and drops what the client still sends for a
  /// moment, so that a client still writing (an oversized body) reads our
  /// answer instead of a reset.
  void linger_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    stream_.expires_after(std::chrono::seconds(2));
    drain();
  }
  void drain() {
    stream_.async_read_some(
        asio::buffer(drain_buffer_),
        [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > (std::size_t(64) << 20))
            return self->close();
          self->drain();
        });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    release_body();
    closed_flag_->close();
    read_timer_.cancel();
    if (streaming_ && log_.error.empty()) log_.error = "client disconnected";
    if (answered_ || log_.status) finish_log();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    server_->remove(shared_from_this());
  }

  class Channel final : public ResponseChannel {
   public:
    Channel(std::shared_ptr<Session> session, std::uint64_t request)
        : session_(session),
          request_(request),
          closed_(session->closed_flag()) {}
    void send(HttpResponse response) override {
      if (auto s = session_.lock())
        s->channel_send(request_, std::move(response));
    }
    void begin_stream(
        int status, std::string content_type,
        std::vector<std::pair<std::string, std::string>> headers) override {
      if (auto s = session_.lock())
        s->channel_begin(request_, status, std::move(content_type),
                         std::move(headers));
    }
    void write(std::string data) override {
      if (auto s = session_.lock()) s->channel_write(request_, std::move(data));
    }
    void end_stream() override {
      if (auto s = session_.lock()) s->channel_end(request_);
    }
    bool open() const override { return !closed_->closed.load(); }
    void on_close(std::function<void()> gone) override {
      closed_->watch(std::move(gone));
    }

   private:
    std::weak_ptr<Session> session_;
    std::uint64_t request_;
    std::shared_ptr<CloseWatch> closed_;
  };

  beast::tcp_stream stream_;
  HttpServer::State* server_;
  asio::steady_timer read_timer_;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> out_;
  std::size_t pending_ = 0;
  bool writing_ = false;
  bool answered_ = false;
  bool response_done_ = false;
  bool streaming_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;    ///< the request was HTTP/1.0: no chunked stream
  bool watching_ = false;  ///< watch_peer()'s read is pending
  Next after_watch_ = Next::nothing;  ///< what follows the watch's end
  bool head_only_ = false;
  bool closed_ = false;
  std::shared_ptr<CloseWatch> closed_flag_ = std::make_shared<CloseWatch>();
  std::uint64_t request_no_ = 0;
  std::uint64_t logged_for_ = 0;
  std::string request_id_;
  std::string remote_;
  std::string continue_;
  std::array<char, 16384> drain_buffer_{};
  std::size_t drained_ = 0;
  std::size_t reserved_ = 0;  // of the server's bodies in flight
  RequestLogEntry log_;
  Clock::time_point started_{};
};

}  // namespace

std::shared_ptr<HttpSession> HttpSession::create(tcp::socket socket,
                                                 HttpServer::State* server) {
  return std::make_shared<Session>(std::move(socket), server);
}

}  // namespace mold::net
