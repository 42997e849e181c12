#pragma once
/// One VAE operation (encode or decode) run whole, with bounded convolutions,
/// in tiles, or through the recovery ladder whole -> bounded -> tiles 64/32/16
/// -> cpu, each rung estimated by the registered estimators.

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "mold/cache/recovery.hpp"
#include "mold/device/backend.hpp"
#include "mold/model/vae.hpp"
#include "mold/plan/tile_plan.hpp"

namespace mold {

class Registry;

enum class VaeMode { whole, bounded, tiled, ladder };
std::string_view to_string(VaeMode mode);
/// "whole", "bounded", "tiled", "ladder"; throws ParseError.
VaeMode parse_vae_mode(std::string_view text);

struct VaeJob {
  std::string op;  ///< "vae_encode" or "vae_decode"
  /// encode: an image (N, 3, H, W) in [-1, 1]; decode: a latent in the VAE's
  /// own space.
  at::Tensor input;
  VaeMode mode = VaeMode::whole;
  int tile = 64;     ///< latent units, for tiled
  int overlap = 16;  ///< latent units
  Blend blend = Blend::smootherstep;
  Bytes workspace_bound = kDefaultConvWorkspace;
  std::string dtype = "float32";  ///< for the estimates
  /// Skip ladder rungs whose estimate does not fit. The registered estimators
  /// describe the published architectures: turn this off for other configs
  /// (e.g. "tiny").
  bool predict = true;
};

struct VaeJobResult {
  at::Tensor output;
  std::string
      rung;  ///< the way that produced it: whole, bounded, tiles_64, ..., cpu
  std::vector<RecoveryAttempt> attempts;
};

/// Runs `job` on `backend` (the VAE's weights and the input are moved to its
/// device; the output comes
/// back on the CPU). With VaeMode::ladder a recognised OOM or an invalid output
/// moves to the next rung; the cpu rung runs on `cpu` (which may be the same
/// backend). Throws what the operation throws (whole, bounded, tiled) or
/// RecoveryFailed (ladder).
VaeJobResult run_vae(Vae& vae, const Registry& registry, const VaeJob& job,
                     const std::shared_ptr<Backend>& backend,
                     const std::shared_ptr<Backend>& cpu);

}  // namespace mold
