// mold's HTTP server on loopback with a test handler: limits, timeouts,
// malformed and hostile requests, streams, keep-alive, many clients at once;
// and the client against it.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mold/net/api_error.hpp>
#include <mold/net/http_client.hpp>
#include <mold/net/http_server.hpp>
#include <mold/net/sse.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "support/mutations.hpp"
#include "support/server_process.hpp"
#include "support/wait.hpp"

using namespace mold::net;
using mold::test::raw_exchange;
using mold::test::status_of_response;
using mold::test::wait_until;

namespace {

/// Answers held back until the test opens the gate (from other threads).
struct Gate {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
  int waiting = 0;

  /// Waits until the gate opens (at most 30 s, so a failed test cannot hang).
  void pass() {
    std::unique_lock<std::mutex> lock(mutex);
    ++waiting;
    opened.wait_for(lock, std::chrono::seconds(30), [this] { return open; });
  }
  int held() {
    std::lock_guard<std::mutex> lock(mutex);
    return waiting;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    opened.notify_all();
  }
};

/// A server answering /echo with what it got, /stream with 5 events written
/// from another thread, /throw by throwing, /slow from another thread once the
/// test opens `gate`.
struct TestServer {
  std::vector<RequestLogEntry> logs;
  std::mutex mutex;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  /// The channel of the last /held request, which is never answered.
  std::shared_ptr<std::shared_ptr<ResponseChannel>> held =
      std::make_shared<std::shared_ptr<ResponseChannel>>();
  std::shared_ptr<std::mutex> held_mutex = std::make_shared<std::mutex>();
  /// How often a /held request's on_close hook was called.
  std::shared_ptr<std::atomic<int>> held_gone =
      std::make_shared<std::atomic<int>>(0);
  std::unique_ptr<HttpServer> server;

  explicit TestServer(ServerOptions options = {}) {
    options.port = 0;
    options.log = [this](const RequestLogEntry& e) {
      std::lock_guard<std::mutex> lock(mutex);
      logs.push_back(e);
    };
    server = std::make_unique<HttpServer>(
        options, [gate = gate, held = held, held_mutex = held_mutex,
                  held_gone = held_gone](HttpRequest r,
                                         std::shared_ptr<ResponseChannel> c) {
          if (r.path == "/throw") throw std::runtime_error("planted");
          if (r.path == "/held") {
            c->on_close([held_gone] { ++*held_gone; });
            std::lock_guard<std::mutex> lock(*held_mutex);
            *held = c;
            return;
          }
          if (r.path == "/stream") {
            std::thread([c] {
              c->begin_stream(200, "text/event-stream", {});
              for (int i = 0; i < 5; ++i)
                c->write(format_sse("progress", std::to_string(i)));
              c->write(format_sse("complete", "done"));
              c->end_stream();
            }).detach();
            return;
          }
          if (r.path == "/slow") {
            std::thread([c, gate] {
              gate->pass();
              HttpResponse resp;
              resp.body = "slow";
              c->send(resp);
            }).detach();
            return;
          }
          HttpResponse resp;
          resp.body = nlohmann::json{{"method", r.method},
                                     {"path", r.path},
                                     {"query", r.query},
                                     {"body_bytes", r.body.size()},
                                     {"id", r.request_id}}
                          .dump();
          c->send(resp);
        });
    server->start();
  }
  int port() const { return server->port(); }
  ServerAddress address() const {
    return parse_server_address("127.0.0.1:" + std::to_string(port()), "test");
  }
};

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra +
         "Connection: close\r\n\r\n";
}

}  // namespace

TEST_CASE("requests are answered with a request id", "[net][server]") {
  TestServer s;
  HttpClient client(s.address());
  const auto r = client.request("GET", "/echo?x=1");
  CHECK(r.status == 200);
  const auto body = nlohmann::json::parse(r.body);
  CHECK(body["path"] == "/echo");
  CHECK(body["query"] == "x=1");
  CHECK(r.header("X-Request-ID") == body["id"]);
  CHECK(r.header("X-Request-ID").size() == 16);
  // A sane id the client sent is kept; anything else is replaced.
  const auto kept =
      client.request("GET", "/echo", {}, "", {{"X-Request-ID", "abc-123"}});
  CHECK(kept.header("X-Request-ID") == "abc-123");
  const auto replaced =
      client.request("GET", "/echo", {}, "", {{"X-Request-ID", "bad id\x7f"}});
  CHECK(replaced.header("X-Request-ID") != "bad id\x7f");
  // A request is logged once its answer is written: the client may read it
  // first.
  wait_until(
      [&] {
        std::lock_guard<std::mutex> lock(s.mutex);
        return s.logs.size() == 3;
      },
      "three requests logged");
  std::lock_guard<std::mutex> lock(s.mutex);
  REQUIRE(s.logs.size() == 3);
  CHECK(s.logs[0].status == 200);
  CHECK(s.logs[0].path == "/echo");
}

TEST_CASE("a kept-alive connection serves one request after another",
          "[net][server]") {
  TestServer s;
  const std::string two =
      "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n" + get("/echo");
  const std::string response = raw_exchange(s.port(), two, 5000);
  std::size_t count = 0;
  for (std::size_t at = 0;
       (at = response.find("HTTP/1.1 200", at)) != std::string::npos; ++at)
    ++count;
  CHECK(count == 2);
}

TEST_CASE("bodies and headers over the limits are refused with their status",
          "[net][server][hostile]") {
  ServerOptions options;
  options.max_body = 1024;
  options.max_header = 2048;
  TestServer s(options);
  SECTION("Content-Length over the limit: 413 before the body is read") {
    const std::string r = raw_exchange(
        s.port(),
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n" +
            std::string(4096, 'x'));
    CHECK(status_of_response(r) == 413);
    CHECK_THAT(r, Catch::Contains("PAYLOAD_TOO_LARGE"));
    CHECK_THAT(r, Catch::Contains("1024"));
  }
  SECTION("a chunked body that grows over the limit: 413") {
    std::string body;
    for (int i = 0; i < 10; ++i)
      body += "200\r\n" + std::string(512, 'y') + "\r\n";
    const std::string r = raw_exchange(
        s.port(),
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
            body);
    CHECK(status_of_response(r) == 413);
  }
  SECTION("headers over the limit: 431") {
    const std::string r = raw_exchange(
        s.port(), get("/echo", "X-Big: " + std::string(4096, 'h') + "\r\n"));
    CHECK(status_of_response(r) == 431);
    CHECK_THAT(r, Catch::Contains("HEADERS_TOO_LARGE"));
  }
  SECTION("a body within the limit is served") {
    const std::string r =
        raw_exchange(s.port(),
                     "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
                     "Connection: close\r\n\r\n0123456789");
    CHECK(status_of_response(r) == 200);
    CHECK_THAT(r, Catch::Contains("\"body_bytes\":10"));
  }
}

TEST_CASE("Expect: 100-continue gets its interim answer", "[net][server]") {
  TestServer s;
  const std::string r =
      raw_exchange(s.port(),
                   "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                   "Content-Length: 3\r\nConnection: close\r\n\r\nabc");
  CHECK(r.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 0) == 0);
}

TEST_CASE("malformed requests get 400 and the server goes on",
          "[net][server][hostile]") {
  TestServer s;
  for (const std::string& bad :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost t\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nContent-Length: "
                    "99999999999999999999999\r\n\r\n"),
        std::string(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        std::string("\0\0\0\0\r\n\r\n", 8)}) {
    INFO(bad);
    const int status = status_of_response(raw_exchange(s.port(), bad, 3000));
    CHECK((status == 400 || status == 413));
  }
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
}

TEST_CASE("a client that trickles its request is cut off at the read timeout",
          "[net][server][hostile]") {
  ServerOptions options;
  options.read_timeout = std::chrono::milliseconds(800);
  TestServer s(options);
  std::string answer;
  const auto start = std::chrono::steady_clock::now();
  std::thread slow([&] {
    answer = raw_exchange(
        s.port(), get("/echo", "X-Pad: " + std::string(200, 'p') + "\r\n"),
        10000, 400, 50);
  });
  // Others are served meanwhile.
  wait_until([&] { return s.server->connections() == 1; },
             "the trickling client");
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
  slow.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  CHECK(status_of_response(answer) == 408);
  CHECK_THAT(answer, Catch::Contains("REQUEST_TIMEOUT"));
  CHECK(seconds < 5);
  // An idle connection is closed without an answer.
  CHECK(raw_exchange(s.port(), "", 3000).empty());
}

TEST_CASE("a stream arrives event by event, from another thread",
          "[net][server][stream]") {
  TestServer s;
  HttpClient client(s.address());
  std::vector<SseEvent> events;
  SseParser parser;
  int status = 0;
  std::string type;
  client.stream(
      "POST", "/stream", "{}", "application/json",
      [&](const ClientResponse& head) {
        status = head.status;
        type = head.header("Content-Type");
      },
      [&](std::string_view data) {
        parser.feed(data, [&](const SseEvent& e) { events.push_back(e); });
      });
  CHECK(status == 200);
  CHECK(type == "text/event-stream");
  REQUIRE(events.size() == 6);
  CHECK(events[0].data == "0");
  CHECK(events[5].event == "complete");
}

TEST_CASE("an HTTP/1.0 client gets its stream close-delimited, not chunked",
          "[net][server][stream]") {
  TestServer s;
  // raw_exchange reads until the server closes: the close ends the stream.
  const std::string r = raw_exchange(
      s.port(), "POST /stream HTTP/1.0\r\nContent-Length: 0\r\n\r\n", 5000);
  CHECK(status_of_response(r) == 200);
  CHECK_THAT(r, !Catch::Contains("Transfer-Encoding"));
  CHECK_THAT(r, Catch::Contains("Connection: close"));
  const std::string body = r.substr(r.find("\r\n\r\n") + 4);
  SseParser parser;
  std::vector<SseEvent> events;
  parser.feed(body, [&](const SseEvent& e) { events.push_back(e); });
  REQUIRE(events.size() == 6);
  CHECK(events[0].data == "0");  // no chunk sizes between the events
  CHECK(events[5].event == "complete");
}

TEST_CASE("a client that closes while its answer is pending is gone",
          "[net][server]") {
  TestServer s;
  // The request is sent and the connection closed before any answer.
  raw_exchange(s.port(), get("/held"), 50);
  std::shared_ptr<ResponseChannel> channel;
  wait_until(
      [&] {
        std::lock_guard<std::mutex> lock(*s.held_mutex);
        channel = *s.held;
        return channel && !channel->open();
      },
      "the held request's channel to say its client went away");
  CHECK_FALSE(channel->open());
  // The hook was told once, at the close; one set after it is called at once.
  wait_until([&] { return s.held_gone->load() == 1; },
             "the held request's on_close hook");
  bool late = false;
  channel->on_close([&late] { late = true; });
  CHECK(late);
  CHECK(s.held_gone->load() == 1);
  // An answer to it now goes nowhere, and the server goes on.
  channel->send(HttpResponse());
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
}

TEST_CASE("a pipelined request read while the first waits is answered next",
          "[net][server]") {
  TestServer s;
  const std::string first =
      "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n";  // answered once the gate opens
  std::string answer;
  std::thread client(
      [&] { answer = raw_exchange(s.port(), first + get("/echo"), 10000); });
  wait_until([&] { return s.gate->held() == 1; }, "the slow request to wait");
  s.gate->release();
  client.join();
  CHECK(answer.find("slow") != std::string::npos);
  CHECK(answer.find("\"path\":\"/echo\"") != std::string::npos);
}

TEST_CASE("a handler that throws is answered 500", "[net][server]") {
  TestServer s;
  HttpClient client(s.address());
  const auto r = client.request("GET", "/throw");
  CHECK(r.status == 500);
  CHECK_THAT(r.body, Catch::Contains("INTERNAL_ERROR"));
  CHECK_THAT(r.body, Catch::Contains("planted"));
}

TEST_CASE("connections beyond the limit get 503", "[net][server]") {
  ServerOptions options;
  options.max_connections = 2;
  TestServer s(options);
  // Two idle connections hold the slots.
  std::thread a([&] { raw_exchange(s.port(), "", 1500); });
  std::thread b([&] { raw_exchange(s.port(), "", 1500); });
  wait_until([&] { return s.server->connections() == 2; },
             "two idle connections");
  const std::string r = raw_exchange(s.port(), get("/echo"), 3000);
  a.join();
  b.join();
  CHECK(status_of_response(r) == 503);
  CHECK_THAT(r, Catch::Contains("TOO_MANY_CONNECTIONS"));
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
}

TEST_CASE("bodies beyond the in-flight budget get 503 at once",
          "[net][server][hostile]") {
  ServerOptions options;
  options.max_body = 1 << 20;
  options.max_bodies_in_flight = 3 << 20;
  TestServer s(options);
  const std::string announce =
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n";
  // Three clients announce 1 MiB each and send nothing more: the budget.
  std::vector<std::thread> holders;
  for (int i = 0; i < 3; ++i)
    holders.emplace_back([&] { raw_exchange(s.port(), announce, 1500); });
  wait_until(
      [&] { return s.server->bodies_in_flight() == std::size_t(3) << 20; },
      "three bodies announced");
  const std::string refused = raw_exchange(s.port(), announce, 3000);
  CHECK(status_of_response(refused) == 503);
  CHECK_THAT(refused, Catch::Contains("SERVER_BUSY"));
  CHECK_THAT(refused, Catch::Contains("Retry-After: 1"));
  // Small requests without a body still pass.
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
  for (auto& t : holders) t.join();
  // The holders left: their reservations are back.
  wait_until([&] { return s.server->bodies_in_flight() == 0; },
             "the reservations back");
  const std::string body(1 << 20, 'x');
  CHECK(status_of_response(raw_exchange(
            s.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                          std::to_string(body.size()) +
                          "\r\nConnection: close\r\n\r\n" + body)) == 200);
}

TEST_CASE("200 clients at once are all answered", "[net][server]") {
  TestServer s;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 200; ++i)
    clients.emplace_back([&, i] {
      const std::string r =
          raw_exchange(s.port(), get(i % 2 ? "/echo" : "/slow"), 20000);
      if (status_of_response(r) == 200) ++ok;
    });
  // The 100 /slow requests are all in flight at once before any is answered.
  wait_until([&] { return s.gate->held() == 100; }, "100 requests held",
             std::chrono::seconds(20));
  s.gate->release();
  for (auto& t : clients) t.join();
  CHECK(ok == 200);
}

TEST_CASE("randomly mutated requests never bring the server down",
          "[net][server][hostile]") {
  ServerOptions options;
  options.read_timeout = std::chrono::milliseconds(300);
  options.max_body = 4096;
  TestServer s(options);
  const std::string valid =
      "POST /echo?a=b HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: 13\r\nConnection: close\r\n\r\n{\"model\":\"x\"}";
  std::mt19937_64 random(5);
  const int cases = mold::test::mutation_cases(300);
  for (int i = 0; i < cases; ++i) {
    const std::string r =
        raw_exchange(s.port(), mold::test::mutate(valid, random), 2000);
    if (!r.empty()) {
      const int status = status_of_response(r);
      INFO(r.substr(0, 200));
      CHECK(status >= 200);
      CHECK(status < 600);
    }
  }
  CHECK(status_of_response(raw_exchange(s.port(), get("/echo"))) == 200);
}

TEST_CASE("the client names the server when it cannot reach it",
          "[net][client]") {
  // A port nothing listens on: bind one and close it.
  int port = 0;
  {
    TestServer s;
    port = s.port();
  }
  HttpClient client(
      parse_server_address("127.0.0.1:" + std::to_string(port), "test"));
  try {
    client.request("GET", "/health");
    FAIL("connected");
  } catch (const ConnectionError& e) {
    CHECK_THAT(e.what(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
    CHECK_THAT(e.what(), Catch::Contains("refused"));
  }
}

TEST_CASE("the client times out on a server that never answers",
          "[net][client]") {
  // A handler that never answers.
  ClientOptions client_options;
  client_options.read_timeout = std::chrono::milliseconds(300);
  ServerOptions silent_options;
  silent_options.port = 0;
  HttpServer never(silent_options,
                   [](HttpRequest, std::shared_ptr<ResponseChannel>) {});
  never.start();
  HttpClient client(
      parse_server_address("127.0.0.1:" + std::to_string(never.port()), "test"),
      client_options);
  try {
    client.request("GET", "/anything");
    FAIL("answered");
  } catch (const ConnectionError& e) {
    CHECK_THAT(e.what(), Catch::Contains("timed out"));
  }
}
