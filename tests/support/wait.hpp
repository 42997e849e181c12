#pragma once
// Waiting in a test on something it can observe (a connection count, a queue
// depth in /api/status, a file a fake wrote) instead of on a clock: wait_until
// polls `ready` until it holds, or records a failure naming what it waited for
// when `timeout` passes (the test goes on, so threads it started are still
// joined) and returns false.

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace mold::test {

template <class Ready>
bool wait_until(Ready&& ready, const char* what,
                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) {
      FAIL_CHECK("waited " << timeout.count() << " ms for " << what);
      return false;
    }
    std::this_thread::sleep_for(2ms);  // poll; deadline above
  }
  return true;
}

}  // namespace mold::test
