#include "mold/base/untrusted_json.hpp"

#include "mold/base/text.hpp"

namespace mold {

nlohmann::json parse_untrusted_json(std::string_view text) {
  if (json_nesting_depth(text) > kMaxJsonNesting)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
}

}  // namespace mold
