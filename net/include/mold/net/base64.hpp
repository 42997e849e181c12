#pragma once
/// Base64 (RFC 4648, standard alphabet, padded): images inside JSON events.

#include <optional>
#include <string>
#include <string_view>

namespace mold::net {

std::string base64_encode(std::string_view bytes);
/// nullopt for anything that is not padded standard base64 (whitespace is
/// not allowed).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace mold::net
