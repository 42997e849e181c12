#pragma once
/// JSON from outside mold's control (a server's answer, an event stream, a
/// plugin's report, a cache file) parsed so that nothing recursive ever meets
/// a hostile depth: nlohmann's parser is iterative, but dump() and copies of
/// the result recurse once per level, and 100,000 levels overflow the stack.

#include <nlohmann/json.hpp>
#include <string_view>

namespace mold {

/// `text` as JSON, or a discarded value (is_discarded()) when it is not JSON
/// or nests deeper than kMaxJsonNesting (mold/base/text.hpp).
nlohmann::json parse_untrusted_json(std::string_view text);

}  // namespace mold
