#pragma once
// An HTTP client for a `mold serve` that a test started.

#include <chrono>
#include <mold/net/http_client.hpp>
#include <string>
#include <utility>

#include "support/server_process.hpp"

namespace mold::test {

/// A client of `server`, sending `api_key` when not empty, that waits up to
/// five minutes for an answer (a sanitized build's generation is slow).
inline mold::net::HttpClient client_for(const ServerProcess& server,
                                        std::string api_key = {}) {
  mold::net::ClientOptions options;
  options.api_key = std::move(api_key);
  options.read_timeout = std::chrono::seconds(300);
  return mold::net::HttpClient(
      mold::net::parse_server_address(server.host(), "test"), options);
}

}  // namespace mold::test
