#include "common/json_output.hpp"

#include <ostream>

namespace mold::tools {

void print_json(std::ostream& out, const nlohmann::json& value) {
  out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
}

}  // namespace mold::tools
