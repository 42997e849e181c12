#include "mold/net/http_message.hpp"

#include <cctype>

namespace mold::net {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (same_name(key, name)) return value;
  return {};
}

bool HttpRequest::has_header(std::string_view name) const {
  for (const auto& entry : headers)
    if (same_name(entry.first, name)) return true;
  return false;
}

std::string_view status_reason(int status) {
  switch (status) {
  case 100:
    return "Continue";
  case 200:
    return "OK";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 413:
    return "Payload Too Large";
  case 415:
    return "Unsupported Media Type";
  case 422:
    return "Unprocessable Entity";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  default:
    return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

}  // namespace mold::net
