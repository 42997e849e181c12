#include <mold/tensor/rms_norm.hpp>

namespace mold {

at::Tensor diffusers_rms_norm(const at::Tensor& x, const at::Tensor& weight,
                              double eps) {
  at::Tensor h;
  {
    const at::Tensor variance = x.to(at::kFloat).pow(2).mean(-1, true);
    h = x * at::rsqrt(variance + eps);
  }
  if (weight.scalar_type() == at::kHalf ||
      weight.scalar_type() == at::kBFloat16)
    h = h.to(weight.scalar_type());
  return h.mul_(weight);
}

at::Tensor transformers_rms_norm(const at::Tensor& x, const at::Tensor& weight,
                                 double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor inv = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * (xf * inv).to(x.scalar_type());
}

}  // namespace mold
