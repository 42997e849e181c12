#include "mold/net/server_address.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>

namespace mold::net {

std::string ServerAddress::display() const {
  return host.find(':') != std::string::npos
             ? fmt::format("[{}]:{}", host, port)
             : fmt::format("{}:{}", host, port);
}

ServerAddress parse_server_address(std::string_view text,
                                   std::string_view what) {
  const std::string shown = escape_control(std::string(text));
  auto fail = [&](const std::string& why) -> void {
    throw InvalidArgument(fmt::format(
        "{} \"{}\": {}; give host, host:port or http://host:port (a bare host "
        "means port {})",
        what, shown, why, kDefaultPort));
  };
  std::string_view rest = text;
  while (!rest.empty() &&
         std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
    rest.remove_suffix(1);
  if (rest.empty()) fail("it is empty");
  const std::size_t scheme_end = rest.find("://");
  if (scheme_end != std::string_view::npos) {
    std::string scheme(rest.substr(0, scheme_end));
    for (char& c : scheme)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "https")
      fail(
          "https is not spoken by mold's client (run it through a local "
          "TLS proxy, or reach the server over a private network)");
    if (scheme != "http")
      fail(fmt::format("the scheme \"{}\" is not http", scheme));
    rest.remove_prefix(scheme_end + 3);
  }
  ServerAddress address;
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string path(rest.substr(slash));
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    address.base_path = path == "/" ? "" : path;
    for (std::size_t begin = 1; begin <= path.size();) {
      const std::size_t end = std::min(path.find('/', begin), path.size());
      const std::string_view segment =
          std::string_view(path).substr(begin, end - begin);
      if (segment == "." || segment == "..")
        fail(fmt::format("the path \"{}\" has a '{}' segment", path,
                         std::string(segment)));
      begin = end + 1;
    }
    for (const char c : path)
      if (std::isspace(static_cast<unsigned char>(c)) ||
          static_cast<unsigned char>(c) < 0x20 || c == '?' || c == '#')
        fail(fmt::format("'{}' cannot be in the path",
                         escape_control(std::string(1, c))));
  }
  for (const char c : authority)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '@' || c == '?' ||
        c == '#' || static_cast<unsigned char>(c) < 0x20)
      fail(fmt::format("'{}' cannot be in a host name",
                       escape_control(std::string(1, c))));
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos)
      fail("an IPv6 address without its ']'");
    address.host = std::string(authority.substr(1, close - 1));
    // An IPv6 literal: hex digits and colons (an embedded IPv4 has dots).
    if (address.host.find(':') == std::string::npos ||
        address.host.find_first_not_of("0123456789abcdefABCDEF:.") !=
            std::string::npos)
      fail(fmt::format("\"{}\" in brackets is not an IPv6 address",
                       escape_control(address.host)));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') fail("text after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) fail("a ':' without a port");
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.find(':') != colon)
      fail("an IPv6 address must be in brackets, as [::1]:7680");
    address.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) fail("a ':' without a port");
    }
  }
  if (address.host.empty()) fail("no host name");
  if (authority.front() != '[')
    for (const char c : address.host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' &&
          c != '.' && c != '_')
        fail(fmt::format("'{}' cannot be in a host name",
                         escape_control(std::string(1, c))));
  if (!port_text.empty()) {
    unsigned long port = 0;
    for (const char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        fail(fmt::format("the port \"{}\" is not a number",
                         std::string(port_text)));
      port = port * 10 + unsigned(c - '0');
      if (port > 65535) break;
    }
    if (port < 1 || port > 65535)
      fail(
          fmt::format("the port {} is not 1 to 65535", std::string(port_text)));
    address.port = static_cast<unsigned short>(port);
  }
  return address;
}

}  // namespace mold::net
