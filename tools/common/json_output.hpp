#pragma once
/// JSON on a tool's output, one way for every command: indented by two, a
/// newline after, and never an exception for text that is not valid UTF-8
/// (error messages and paths come from outside; such bytes are replaced).

#include <iosfwd>
#include <nlohmann/json.hpp>

namespace mold::tools {

/// Writes `value` to `out` as dump(2) does, then "\n". Invalid UTF-8 in
/// strings becomes U+FFFD instead of throwing.
void print_json(std::ostream& out, const nlohmann::json& value);

}  // namespace mold::tools
