#include "mold/tensor/timestep_embedding.hpp"

#include <cmath>

namespace mold {

at::Tensor timestep_frequencies(int64_t dim, double max_period,
                                const c10::Device& device) {
  const int64_t half = dim / 2;
  return (at::arange(0, half,
                     at::TensorOptions().dtype(at::kFloat).device(device)) *
          -std::log(max_period) / double(half))
      .exp();
}

at::Tensor cos_then_sin(const at::Tensor& angles) {
  return at::cat({angles.cos(), angles.sin()}, -1);
}

}  // namespace mold
