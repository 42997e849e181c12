#pragma once
/// A request target's query ("id=ab12&x=1") read as a URL query
/// (application/x-www-form-urlencoded): parameters split on '&', '+' as a
/// space, %XX escapes decoded. Proxies and CDNs add parameters of their own
/// (utm_source, cache busters): a route reads the ones it knows and leaves
/// the rest.

#include <optional>
#include <string>
#include <string_view>

namespace mold::net {

/// `text` with its %XX escapes decoded (and '+' as a space when `plus`);
/// none when an escape is not two hex digits.
std::optional<std::string> percent_decoded(std::string_view text,
                                           bool plus = false);

/// The first value of parameter `name` in `query`, decoded; none when the
/// query has no such parameter or its value is malformed. A parameter
/// without '=' has the value "".
std::optional<std::string> query_parameter(std::string_view query,
                                           std::string_view name);

}  // namespace mold::net
