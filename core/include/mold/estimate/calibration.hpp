#pragma once
/// Estimator constants in TOML files shipped beside a plugin and overridable by
/// the user.
///
/// A calibration file has one table per (op, backend), of one of two kinds.
/// Per pixel (VAEs):
///
///     [meta]
///     family = "qwen_image"  # for people; the plugin decides
///     spatial_scale = 8      # pixels per latent unit (tiles)
///
///     [vae_decode.cuda]
///     bytes_per_pixel = 2900  # per output pixel per element byte
///     calibrated = true
///     source = "incident 3 of docs/incidents.md: RTX 4090 fp16 grid"
///     # optional, where the constant varies with size:
///     # [pixels, measured bytes_per_pixel] pairs
///     points = [[262144, 5132], [589824, 4596]]
///     headroom = 1.15
///     # optional, where an attention over the latent's tokens
///     # (pixels / spatial_scale^2 of them) outgrows the convolutions:
///     attention_fixed_bytes = 1.3e6
///     bytes_per_latent_score = 2.025  # per token pair per element byte
///
///     [vae_decode.cpu.tiny]   # an architecture other than the published
///     bytes_per_pixel = 59.7  # one: its own table, a whole one
///
/// The estimate is bytes_per_pixel x height x width x element size x batch x
/// frames (for a tile: the tile's pixels). A table measured in several
/// dtypes adds what the VAE computes in float32 whatever the dtype:
/// float32_bytes_per_pixel x height x width x 4 x batch x frames. With
/// `points`, bytes_per_pixel at an area is the larger of the two measured
/// neighbours times `headroom` (a conservative upper envelope); outside the
/// measured range, the larger of the nearest point times `headroom` and the
/// flat constant. With an attention term, the estimate is the larger of the
/// activations and (attention_fixed_bytes + bytes_per_latent_score x tokens^2
/// x element size) x headroom x batch x frames: the two peak at different
/// times. A sub-table named after an architecture (Workload::arch) holds that
/// architecture's constants; workloads of other architectures use the
/// table itself.
///
/// Per token and attention score (text encoders, denoisers): a table with
/// bytes_per_token / bytes_per_score (mold/estimate/sequence_model.hpp). The
/// core registers estimators for the pixel tables; the plugin registers its
/// sequence tables' estimators, since only it knows an architecture's tokens
/// and scores.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mold/estimate/estimate.hpp"
#include "mold/estimate/sequence_model.hpp"

namespace mold {

/// The constants of one (op, backend) table.
struct PixelLinearModel {
  std::string op;
  std::string backend;
  /// The architecture of a [op.backend.ARCH] table; "" for [op.backend]
  /// (the published architecture, and any without a table of its own).
  std::string arch;
  double bytes_per_pixel = 0;
  /// Per pixel per float32 byte: the part computed in float32 in every dtype.
  double float32_bytes_per_pixel = 0;
  std::vector<std::pair<double, double>>
      points;  ///< (pixels, measured k), by pixels
  double headroom = 1.0;
  /// The attention term (0: none): bytes, and bytes per latent token pair
  /// per element byte.
  double attention_fixed_bytes = 0;
  double bytes_per_latent_score = 0;
  bool calibrated = false;
  std::string source;
  int spatial_scale = 8;
  std::filesystem::path file;  ///< the file the table came from
  std::filesystem::path
      overridden_by;  ///< the user file that set some of its keys

  /// The per-pixel constant applied at `pixels`.
  double bytes_per_pixel_at(double pixels) const;
  Estimate estimate(const Workload& workload) const;
};

class CalibrationFile {
 public:
  /// Reads `shipped`, then `user_override` (when it exists): each key the user
  /// sets replaces the shipped one; a user table the shipped file lacks adds a
  /// model. Throws ConfigError naming the file (shipped or user), line and key.
  static CalibrationFile load(const std::filesystem::path& shipped,
                              const std::filesystem::path& user_override = {});

  /// Checks that `file` may take a table from `molddiag calibrate --write`:
  /// TOML that reads as a calibration file (every table valid; an empty file
  /// is one) whose [meta] family, where it names one, is `family`. Throws
  /// ConfigError naming the file, line and what is wrong; reads only.
  static void check_write_target(const std::filesystem::path& file,
                                 const std::string& family);

  /// The per-pixel tables.
  const std::vector<PixelLinearModel>& models() const { return models_; }
  /// The table of (op, backend, arch) exactly; arch "" is [op.backend].
  const PixelLinearModel* find(const std::string& op,
                               const std::string& backend,
                               const std::string& arch = "") const;
  /// The per-token tables.
  const std::vector<SequenceModel>& sequence_models() const {
    return sequence_models_;
  }
  const SequenceModel* find_sequence(const std::string& op,
                                     const std::string& backend) const;
  /// An estimator for each [op.backend] per-pixel table, keyed under
  /// `family`; it uses the [op.backend.ARCH] table of a workload's arch where
  /// there is one (mold/plugin/data_files.hpp registers them).
  std::vector<std::pair<EstimatorKey, Estimator>> estimators(
      const std::string& family) const;

 private:
  std::vector<PixelLinearModel> models_;
  std::vector<SequenceModel> sequence_models_;
};

}  // namespace mold
