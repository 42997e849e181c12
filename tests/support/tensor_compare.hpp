#pragma once
// How far one tensor is from another, for tests that compare against a
// reference.

#include <algorithm>

#include "support/aten_for_tests.hpp"

namespace mold::test {

/// ||a - b|| / ||b|| (b's norm floored at 1e-30, so that a zero reference
/// gives a large number rather than a division by zero).
inline double relative_l2(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() /
         std::max(b.norm().item<double>(), 1e-30);
}

}  // namespace mold::test
