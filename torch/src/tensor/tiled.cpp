#include "mold/tensor/tiled.hpp"

#include <fmt/format.h>

#include "mold/base/error.hpp"

namespace mold {

namespace {

/// Weights along one axis of a tile of `length` output pixels: rising over
/// `ramp` pixels on a side that has a neighbour, 1 elsewhere.
at::Tensor axis_weights(int64_t length, int64_t ramp, bool before, bool after,
                        Blend blend, const at::TensorOptions& options) {
  std::vector<float> w(std::size_t(length), 1.0f);
  for (int64_t i = 0; i < length && ramp > 0; ++i) {
    const double t = (double(i) + 0.5) / double(ramp);
    if (before && i < ramp) w[std::size_t(i)] *= float(blend_ramp(blend, t));
    const int64_t from_end = length - 1 - i;
    if (after && from_end < ramp)
      w[std::size_t(i)] *=
          float(blend_ramp(blend, (double(from_end) + 0.5) / double(ramp)));
  }
  return at::tensor(w, at::TensorOptions().dtype(at::kFloat)).to(options);
}

}  // namespace

at::Tensor run_tiled(const at::Tensor& input, const TilePlan& plan,
                     int input_scale, int output_scale, Blend blend,
                     const std::function<at::Tensor(const at::Tensor&)>& op) {
  if (input.dim() != 4)
    throw InvalidArgument(
        fmt::format("run_tiled takes an NCHW tensor, got {}-D", input.dim()));
  if (input.size(2) != int64_t(plan.height) * input_scale ||
      input.size(3) != int64_t(plan.width) * input_scale)
    throw InvalidArgument(fmt::format(
        "the input is {}x{} but the plan covers {}x{} latents at {} px each",
        input.size(2), input.size(3), plan.height, plan.width, input_scale));
  if (plan.tiles.size() == 1) return op(input);

  at::Tensor sum, weight_sum;
  const int64_t ramp = int64_t(plan.overlap) * output_scale;
  for (const Tile& t : plan.tiles) {
    const at::Tensor piece = input
                                 .narrow(2, int64_t(t.y0) * input_scale,
                                         int64_t(t.y1 - t.y0) * input_scale)
                                 .narrow(3, int64_t(t.x0) * input_scale,
                                         int64_t(t.x1 - t.x0) * input_scale);
    at::Tensor out = op(piece);
    if (!sum.defined()) {
      sum = at::zeros(
          {out.size(0), out.size(1), int64_t(plan.height) * output_scale,
           int64_t(plan.width) * output_scale},
          out.options());
      weight_sum = at::zeros({1, 1, sum.size(2), sum.size(3)}, out.options());
    }
    const auto options = out.options();
    const at::Tensor wy = axis_weights(out.size(2), ramp, t.y0 > 0,
                                       t.y1 < plan.height, blend, options);
    const at::Tensor wx = axis_weights(out.size(3), ramp, t.x0 > 0,
                                       t.x1 < plan.width, blend, options);
    const at::Tensor w = wy.view({1, 1, -1, 1}) * wx.view({1, 1, 1, -1});
    const int64_t oy = int64_t(t.y0) * output_scale,
                  ox = int64_t(t.x0) * output_scale;
    sum.narrow(2, oy, out.size(2)).narrow(3, ox, out.size(3)).add_(out * w);
    weight_sum.narrow(2, oy, out.size(2)).narrow(3, ox, out.size(3)).add_(w);
  }
  return sum.div_(weight_sum);
}

}  // namespace mold
