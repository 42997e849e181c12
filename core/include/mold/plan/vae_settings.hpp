#pragma once
/// How one VAE operation is to run (runtime/vae_runner.hpp runs it): the op,
/// whole, with bounded convolutions, in tiles or through the recovery ladder,
/// and the limits of each. Torch-free, so that a tool can read and check them
/// before it loads libtorch.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/plan/conv_plan.hpp"
#include "mold/plan/tile_plan.hpp"

namespace mold {

enum class VaeMode { whole, bounded, tiled, ladder };
std::string_view to_string(VaeMode mode);
/// "whole", "bounded", "tiled", "ladder"; throws ParseError.
VaeMode parse_vae_mode(std::string_view text);

struct VaeSettings {
  std::string op;  ///< "vae_encode" or "vae_decode"
  VaeMode mode = VaeMode::whole;
  int tile = 64;     ///< latent units, for tiled
  int overlap = 16;  ///< latent units
  Blend blend = Blend::smootherstep;
  Bytes workspace_bound = kDefaultConvWorkspace;
  std::string dtype = "float32";  ///< for the estimates
  /// Run an input with NaN or Inf values. Refused by default: a VAE turns them
  /// into NaN pixels. When allowed and the input has them, the output may be
  /// non-finite too; it must still not be all zeros.
  bool allow_nonfinite = false;
  /// Skip ladder rungs whose estimate does not fit. The registered estimators
  /// describe the published architectures and the tiny one (an arch's own
  /// table): turn this off for a config they do not describe.
  bool predict = true;
};

/// The recovery ladder's tile rungs, in latent units, largest first.
inline constexpr std::array<int, 3> kLadderTiles = {64, 32, 16};

struct Workload;

/// The work of a VAE phase as the recovery ladder's rungs after the whole do
/// it, in the ladder's order: bounded (the whole image, its attention in
/// chunks of scores under `workspace_bound`), then each tile rung smaller than
/// the latent. What a VAE phase is planned, admitted and given memory with
/// when the whole does not fit: the first that fits (the ladder, predicting
/// from the same estimates, then runs that rung). Empty for an op that has no
/// ladder, or a workload that is itself a rung.
std::vector<Workload> vae_fallback_workloads(
    const Workload& whole, Bytes workspace_bound = kDefaultConvWorkspace);

}  // namespace mold
