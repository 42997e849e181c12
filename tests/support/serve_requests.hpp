#pragma once
// What the tests of a real `mold serve` send and wait for: a small generate
// body, a stream read into events, the server's busy, idle and queued states
// from /api/status, and the gate the faulty-slow model's steps wait on.

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <mold/net/http_client.hpp>
#include <mold/net/sse.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "support/process.hpp"
#include "support/wait.hpp"

namespace mold::test {

using Json = nlohmann::json;
using mold::net::ClientResponse;
using mold::net::HttpClient;

/// A tiny Z-Image generate body (64 px, 2 steps) with `seed`.
inline std::string fox(std::uint64_t seed, int size = 64,
                       std::string model = "z-image-turbo") {
  return Json{{"model", model}, {"prompt", "a red fox in the snow"},
              {"width", size},  {"height", size},
              {"steps", 2},     {"seed", seed}}
      .dump();
}

inline Json json_of(const ClientResponse& r) {
  INFO(r.body);
  return Json::parse(r.body);
}

struct Streamed {
  int status = 0;
  std::vector<mold::net::SseEvent> events;
  std::string body;  ///< when the status is not 200
};

inline Streamed stream(HttpClient& client, const std::string& body) {
  Streamed out;
  mold::net::SseParser parser;
  client.stream(
      "POST", "/api/generate/stream", body, "application/json",
      [&](const ClientResponse& head) { out.status = head.status; },
      [&](std::string_view data) {
        if (out.status != 200) return void(out.body.append(data));
        parser.feed(data, [&](const mold::net::SseEvent& e) {
          out.events.push_back(e);
        });
      });
  return out;
}

/// Waits until the server runs a job (GET /api/status says busy).
inline bool wait_busy(HttpClient& client) {
  return wait_until(
      [&] {
        return json_of(client.request("GET", "/api/status"))["busy"] == true;
      },
      "the server to run a job");
}

/// Waits until the server has no job running or waiting (GET /api/status).
inline bool wait_idle(HttpClient& client) {
  return wait_until(
      [&] {
        const Json status = json_of(client.request("GET", "/api/status"));
        return status["busy"] == false && status["queue"]["depth"] == 0;
      },
      "the server to go idle");
}

/// Waits until `depth` jobs wait in the server's queue (GET /api/status).
inline bool wait_queued(HttpClient& client, int depth) {
  return wait_until(
      [&] {
        return json_of(client.request(
                   "GET", "/api/status"))["queue"]["depth"] == depth;
      },
      "a job in the queue");
}

/// The gate faulty-slow's denoise steps wait on (tests/plugins/faulty): a file
/// in a folder of the test's own, named to the server by MOLD_TEST_GATE. Opened
/// when the test lets the jobs go, or when it ends (so a failed test stops).
struct SlowGate {
  TempDir dir;
  std::string file() const { return dir.path() + "/open"; }
  std::map<std::string, std::string> env() const {
    return {{"MOLD_TEST_GATE", file()}};
  }
  void open() const { std::ofstream(file()).put('\n'); }
  ~SlowGate() { open(); }
};

inline std::string slow(int seed, int steps = 2) {
  // faulty-slow: each denoise step waits for the test's SlowGate.
  return Json{{"model", "faulty-slow"},
              {"prompt", "x"},
              {"steps", steps},
              {"seed", seed}}
      .dump();
}

}  // namespace mold::test
