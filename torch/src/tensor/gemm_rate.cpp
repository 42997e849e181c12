#include "mold/tensor/gemm_rate.hpp"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace mold {

GemmRate measure_gemm(const GemmShape& shape, at::ScalarType dtype,
                      double min_seconds) {
  using Clock = std::chrono::steady_clock;
  at::NoGradGuard no_grad;
  const auto options = at::TensorOptions().dtype(dtype);
  const at::Tensor input = at::randn({shape.rows, shape.in}, options);
  const at::Tensor weight =
      at::randn({shape.out, shape.in}, options) / std::sqrt(double(shape.in));
  at::Tensor output = at::linear(input, weight);  // untimed: first-call costs
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 3 ||
         std::chrono::duration<double>(Clock::now() - start).count() <
             min_seconds) {
    const auto begin = Clock::now();
    output = at::linear(input, weight);
    times.push_back(
        std::chrono::duration<double>(Clock::now() - begin).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2,
                   times.end());
  GemmRate rate;
  rate.seconds = times[times.size() / 2];
  rate.repeats = int(times.size());
  rate.gflops = rate.seconds > 0 ? shape.flops() / rate.seconds / 1e9 : 0;
  return rate;
}

}  // namespace mold
