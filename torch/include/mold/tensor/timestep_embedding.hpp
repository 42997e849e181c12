#pragma once
/// The sinusoidal timestep embedding of diffusers' get_timestep_embedding, as
/// both transformers compute it before their MLP: frequencies
/// exp(-ln(max_period) k / half) for k < half, in float32, and the angles'
/// cosines then sines (flip_sin_to_cos). Each family forms the angles in its
/// reference's order of multiplication, which rounds differently.

#include <ATen/ATen.h>

namespace mold {

/// (dim / 2,) float32 frequencies on `device`.
at::Tensor timestep_frequencies(int64_t dim, double max_period,
                                const c10::Device& device);

/// [cos(angles), sin(angles)] along the last dimension, in angles' dtype.
at::Tensor cos_then_sin(const at::Tensor& angles);

}  // namespace mold
