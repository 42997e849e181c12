#include "mold/tensor/rotary.hpp"

#include <limits>

namespace mold {

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
}

at::Tensor rotate_interleaved_pairs(const at::Tensor& x, const at::Tensor& cos,
                                    const at::Tensor& sin) {
  const auto sizes = x.sizes();
  const at::Tensor pairs = x.to(at::kFloat).unflatten(-1, {-1, 2});
  const at::Tensor re = pairs.select(-1, 0);
  const at::Tensor im = pairs.select(-1, 1);
  at::Tensor out = at::stack({re * cos - im * sin, re * sin + im * cos}, -1);
  return out.view(sizes).to(x.scalar_type());
}

double lowest_finite(at::ScalarType dtype) {
  switch (dtype) {
  case at::kHalf:
    return double(std::numeric_limits<c10::Half>::lowest());
  case at::kBFloat16:
    return double(std::numeric_limits<c10::BFloat16>::lowest());
  case at::kDouble:
    return std::numeric_limits<double>::lowest();
  default:
    return double(std::numeric_limits<float>::lowest());
  }
}

}  // namespace mold
