#pragma once
/// Where a mold server is: MOLD_HOST as a person writes it. A bare host means
/// http://host:7680.

#include <string>
#include <string_view>

namespace mold::net {

inline constexpr unsigned short kDefaultPort = 7680;

struct ServerAddress {
  std::string host;  ///< "gpu-box", "127.0.0.1", "::1" (no brackets)
  unsigned short port = kDefaultPort;
  std::string base_path;  ///< "" or "/mold" (a prefix behind a proxy)
  /// "gpu-box:7680", "[::1]:7680": how labels and messages name the server.
  std::string display() const;
};

/// Parses "host", "host:port", "[v6]:port", "http://host[:port][/prefix]".
/// Throws InvalidArgument naming `what` (e.g. "MOLD_HOST") and the value: an
/// empty host, a port that is not 1..65535, https (the client speaks plain
/// HTTP; put a TLS proxy beside the client), other schemes, spaces.
ServerAddress parse_server_address(std::string_view text,
                                   std::string_view what);

}  // namespace mold::net
