// GET /health and GET /metrics against a real mold serve on loopback: C
// clients on keep-alive connections for D seconds each route; requests per
// second and the latency percentiles (target: >= 5,000 requests/s).
//
//   ./build/bin/http_throughput_bench [connections] [seconds]
//   (default: 16 connections, 5 s per route)

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "bench_server.hpp"

namespace {

struct Result {
  double rps = 0;
  double p50 = 0, p99 = 0, max = 0;  // ms
  long errors = 0;
};

Result load(int port, const std::string& path, int connections,
            double seconds) {
  const std::string request =
      fmt::format("GET {} HTTP/1.1\r\nHost: bench\r\n\r\n", path);
  std::mutex mutex;
  std::vector<double> latencies;
  std::atomic<long> errors{0};
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c)
    threads.emplace_back([&] {
      std::vector<double> mine;
      mold_bench::Connection connection(port);
      while (std::chrono::steady_clock::now() < until) {
        const auto t = std::chrono::steady_clock::now();
        if (connection.exchange(request) != 200) ++errors;
        mine.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - t)
                           .count());
      }
      std::lock_guard<std::mutex> lock(mutex);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::sort(latencies.begin(), latencies.end());
  Result r;
  r.rps = double(latencies.size()) / elapsed;
  auto at = [&](double q) {
    return latencies[std::min(latencies.size() - 1,
                              std::size_t(q * double(latencies.size())))];
  };
  r.p50 = at(0.50);
  r.p99 = at(0.99);
  r.max = latencies.back();
  r.errors = errors;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int connections = argc > 1 ? std::max(1, std::atoi(argv[1])) : 16;
  const double seconds = argc > 2 ? std::max(1.0, std::atof(argv[2])) : 5.0;
  mold_bench::BenchServer server({"--tiny"});
  fmt::print(
      "mold serve on loopback, {} keep-alive connections, {} s per "
      "route (target >= 5000 requests/s)\n",
      connections, seconds);
  for (const char* path : {"/health", "/metrics"}) {
    const Result r = load(server.port(), path, connections, seconds);
    fmt::print(
        "  GET {:<9} {:9.0f} requests/s  latency p50 {:.3f} ms, p99 {:.3f} ms, "
        "max {:.3f} ms, errors {}\n",
        path, r.rps, r.p50, r.p99, r.max, r.errors);
  }
  return 0;
}
