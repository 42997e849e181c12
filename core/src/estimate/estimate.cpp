#include "mold/estimate/estimate.hpp"

#include <tuple>

namespace mold {

std::string EstimatorKey::to_string() const {
  return family + "/" + op + "/" + backend;
}

bool EstimatorKey::operator<(const EstimatorKey& other) const {
  return std::tie(family, op, backend) <
         std::tie(other.family, other.op, other.backend);
}

bool EstimatorKey::operator==(const EstimatorKey& other) const {
  return std::tie(family, op, backend) ==
         std::tie(other.family, other.op, other.backend);
}

}  // namespace mold
