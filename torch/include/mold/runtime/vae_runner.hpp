#pragma once
/// One VAE operation (encode or decode) run whole, with bounded convolutions,
/// in tiles, or through the recovery ladder whole -> bounded -> tiles 64/32/16
/// -> cpu, each rung estimated by the registered estimators.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mold/cache/recovery.hpp"
#include "mold/device/backend.hpp"
#include "mold/model/vae.hpp"
#include "mold/plan/vae_settings.hpp"

namespace mold {

class Registry;

/// A VAE operation: how to run it, and its input.
struct VaeJob : VaeSettings {
  VaeJob() = default;
  explicit VaeJob(VaeSettings settings) : VaeSettings(std::move(settings)) {}

  /// encode: an image (N, 3, H, W) in [-1, 1]; decode: a latent in the VAE's
  /// own space.
  at::Tensor input;
  /// Names the input in error messages ("x.safetensors: tensor 'latent'");
  /// empty: "the image" or "the latent".
  std::string input_name;
};

struct VaeJobResult {
  at::Tensor output;
  std::string
      rung;  ///< the way that produced it: whole, bounded, tiles_64, ..., cpu
  std::vector<RecoveryAttempt> attempts;
};

/// An input with NaN or Inf values (VaeJob::allow_nonfinite not set).
class NonFiniteInput : public InvalidArgument {
 public:
  NonFiniteInput(const std::string& message, int64_t count)
      : InvalidArgument(message), count_(count) {}
  /// How many values are NaN or Inf.
  int64_t count() const { return count_; }

 private:
  int64_t count_;
};

/// Throws InvalidArgument unless `job` can run on `vae`: the op is vae_encode
/// or vae_decode, the input's shape is one Vae::check_input() accepts, and
/// (unless job.allow_nonfinite) every value is finite (NonFiniteInput, with
/// how many are not). run_vae() calls it first; a caller may call it earlier,
/// e.g. before unscale_latent().
void check_vae_job(const Vae& vae, const VaeJob& job);

/// Runs `job` on `backend` (the VAE's weights and the input are moved to its
/// device; the output comes
/// back on the CPU). With VaeMode::ladder a recognised OOM or an invalid output
/// moves to the next rung; the cpu rung runs on `cpu` (which may be the same
/// backend). Every mode checks the output with check_output() (finite, and not
/// all zeros for an input that is not; with allow_nonfinite and a non-finite
/// input, only the second): whole, bounded and tiled throw InvalidOutput naming
/// the op and the way it ran, the ladder moves to the next rung. Throws
/// InvalidArgument (check_vae_job()) before any work, what the operation throws
/// (whole, bounded, tiled; libtorch's errors unchanged), InvalidOutput, or
/// RecoveryFailed (ladder).
VaeJobResult run_vae(Vae& vae, const Registry& registry, const VaeJob& job,
                     const std::shared_ptr<Backend>& backend,
                     const std::shared_ptr<Backend>& cpu);

}  // namespace mold
