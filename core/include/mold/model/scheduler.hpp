#pragma once
/// The flow-matching Euler sampler (diffusers'
/// FlowMatchEulerDiscreteScheduler): a schedule of noise levels (sigmas) from 1
/// to 0, shifted towards the noisy end, and the Euler step x <- x + (sigma_next
/// - sigma) * velocity.

#include <optional>
#include <string>
#include <vector>

namespace mold {

class JsonConfig;

/// `scheduler/scheduler_config.json`. Options the reference has but mold does
/// not (karras, exponential or beta sigmas, inverted sigmas) are refused when
/// read, naming the key, rather than silently ignored.
struct FlowMatchConfig {
  int num_train_timesteps = 1000;
  double shift = 1.0;
  bool use_dynamic_shifting = false;
  double base_shift = 0.5;
  double max_shift = 1.15;
  int base_image_seq_len = 256;
  int max_image_seq_len = 4096;
  std::optional<double> shift_terminal;

  static FlowMatchConfig from_json(const JsonConfig& config);
  /// Z-Image-Turbo's published scheduler: shift 3, no dynamic shifting.
  static FlowMatchConfig zimage_turbo();
};

/// The noise levels of one run: `sigmas` has steps + 1 values, the last 0;
/// `timesteps` = sigmas * num_train_timesteps for the first `steps`.
struct FlowMatchSchedule {
  std::vector<float> sigmas;
  std::vector<float> timesteps;
  int steps() const { return int(timesteps.size()); }
  /// sigma_next - sigma of step i (what the Euler step multiplies by).
  float delta(int i) const { return sigmas[i + 1] - sigmas[i]; }
};

/// mu for dynamic shifting (FLUX's calculate_shift): linear in the number of
/// image tokens between (base_image_seq_len, base_shift) and
/// (max_image_seq_len, max_shift).
double flow_match_mu(const FlowMatchConfig& config, long image_tokens);

/// The schedule for `steps` steps from sigma_max = 1 to `sigma_min` (the
/// scheduler's own set_timesteps(steps); diffusers' Z-Image pipeline set
/// sigma_min 0 until it passed its own sigmas), shifted by the config's shift,
/// or by time_shift(mu) when
/// dynamic shifting is on (mu required then: InvalidArgument without it).
/// Computed in double and rounded to float as the reference does (numpy
/// float64, then float32). Throws InvalidArgument for steps outside
/// [1, 1000].
FlowMatchSchedule flow_match_schedule(const FlowMatchConfig& config, int steps,
                                      double sigma_min,
                                      std::optional<double> mu = {});

/// The schedule for the given sigmas (set_timesteps(sigmas=...), what
/// Z-Image's pipeline passes: linspace(1, 1/steps, steps)): shifted by the
/// config's shift or by time_shift(mu) as flow_match_schedule, then stretched
/// to shift_terminal, in float32 as the reference computes on its float32
/// array; a final sigma 0 appended. Throws InvalidArgument for 0 or more than
/// 1000 sigmas, or a sigma outside (0, 1].
FlowMatchSchedule flow_match_schedule_from_sigmas(
    const FlowMatchConfig& config, const std::vector<float>& sigmas,
    std::optional<double> mu = {});

}  // namespace mold
