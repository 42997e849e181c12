#pragma once
/// Running an image operation tile by tile and blending the results.

#include <ATen/ATen.h>

#include <functional>

#include "mold/plan/tile_plan.hpp"

namespace mold {

/// Runs `op` on each tile of `input` (NCHW) and blends the outputs. The plan is
/// in latent units; `input_scale` is the input's pixels per latent unit (1 for
/// a latent, 8 for an image) and `output_scale` the output's (8 for a decode, 1
/// for an encode). Each output pixel is the weighted mean of the tiles covering
/// it, weights rising over `overlap` from each neighbouring tile's side.
at::Tensor run_tiled(const at::Tensor& input, const TilePlan& plan,
                     int input_scale, int output_scale, Blend blend,
                     const std::function<at::Tensor(const at::Tensor&)>& op);

}  // namespace mold
