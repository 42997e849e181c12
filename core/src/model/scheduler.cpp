#include "mold/model/scheduler.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "mold/base/error.hpp"
#include "mold/config/json_config.hpp"

namespace mold {

namespace {

/// The schedule stretches its sigmas so that the last is shift_terminal:
/// nothing to stretch when the last is still 1 (one step from pure noise).
std::string terminal_problem(std::size_t steps) {
  return fmt::format(
      "{} steps: this model's schedule ends at shift_terminal, which needs "
      "a last sigma below 1; give at least 2 steps",
      steps);
}

}  // namespace

FlowMatchConfig FlowMatchConfig::from_json(const JsonConfig& json) {
  FlowMatchConfig c;
  // Another scheduler's config would be run as this one's: refused.
  if (json.has_value("_class_name") &&
      json.string("_class_name") != "FlowMatchEulerDiscreteScheduler")
    throw ConfigError(
        json.origin(), 0, "_class_name",
        fmt::format("is \"{}\"; mold samples with diffusers' "
                    "FlowMatchEulerDiscreteScheduler, the one the Z-Image "
                    "and Qwen-Image pipelines ship",
                    json.string("_class_name")));
  for (const char* key : {"base_shift", "max_shift"})
    if (json.has(key) && !json.has_value(key))
      throw ConfigError(json.origin(), 0, key,
                        "is null; the pipelines compute the shift from it: "
                        "give a number or remove the key");
  c.num_train_timesteps = int(json.integer_or(
      "num_train_timesteps", c.num_train_timesteps, 1, 1000000));
  c.shift = json.number_or("shift", c.shift);
  // Bounded far beyond the published configs (shift 1 to 3, base_shift
  // 0.5, max_shift 0.9 to 1.15), so that the sigmas stay finite in float32.
  if (!(c.shift > 0) || c.shift > 10000)
    throw ConfigError(
        json.origin(), 0, "shift",
        fmt::format("is {}; mold takes 0 < shift <= 10000 (the published "
                    "configs use 1 to 3)",
                    c.shift));
  c.use_dynamic_shifting =
      json.boolean_or("use_dynamic_shifting", c.use_dynamic_shifting);
  c.base_shift = json.number_or("base_shift", c.base_shift);
  c.max_shift = json.number_or("max_shift", c.max_shift);
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"base_shift", c.base_shift},
        {"max_shift", c.max_shift}})
    if (std::abs(value) > 20)
      throw ConfigError(
          json.origin(), 0, key,
          fmt::format("is {}; the shift is e^mu with mu between base_shift "
                      "and max_shift, so mold takes -20 to 20 (the "
                      "published configs use 0.5 to 1.15)",
                      value));
  c.base_image_seq_len = int(
      json.integer_or("base_image_seq_len", c.base_image_seq_len, 1, 1 << 30));
  c.max_image_seq_len = int(
      json.integer_or("max_image_seq_len", c.max_image_seq_len, 1, 1 << 30));
  if (c.use_dynamic_shifting && c.max_image_seq_len == c.base_image_seq_len)
    throw ConfigError(json.origin(), 0, "max_image_seq_len",
                      "equals base_image_seq_len; dynamic shifting needs two "
                      "different lengths");
  // 0 is off, as in diffusers (`if self.config.shift_terminal:`).
  if (json.has_value("shift_terminal") && json.number("shift_terminal") != 0) {
    c.shift_terminal = json.number("shift_terminal");
    if (*c.shift_terminal >= 1 || *c.shift_terminal < 0)
      throw ConfigError(
          json.origin(), 0, "shift_terminal",
          fmt::format("is {}; it must be in [0, 1)", *c.shift_terminal));
  }
  // Dynamic shifting as exp(mu) (diffusers' default time_shift_type); the
  // "linear" shift and stochastic sampling change the sigmas or the steps.
  const std::string time_shift =
      json.string_or("time_shift_type", "exponential");
  if (time_shift != "exponential")
    throw ConfigError(json.origin(), 0, "time_shift_type",
                      fmt::format("is \"{}\"; mold's flow-matching sampler "
                                  "shifts exponentially (set it to "
                                  "\"exponential\" or remove it)",
                                  time_shift));
  for (const char* unsupported :
       {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas",
        "invert_sigmas", "stochastic_sampling"})
    if (json.boolean_or(unsupported, false))
      throw ConfigError(json.origin(), 0, unsupported,
                        "is true; mold's flow-matching sampler does not "
                        "support it (set it to false or remove it)");
  return c;
}

FlowMatchConfig FlowMatchConfig::zimage_turbo() {
  FlowMatchConfig c;
  c.shift = 3.0;
  return c;
}

double flow_match_mu(const FlowMatchConfig& c, long image_tokens) {
  const double m = (c.max_shift - c.base_shift) /
                   double(c.max_image_seq_len - c.base_image_seq_len);
  const double b = c.base_shift - m * c.base_image_seq_len;
  return double(image_tokens) * m + b;
}

FlowMatchSchedule flow_match_schedule(const FlowMatchConfig& c, int steps,
                                      double sigma_min,
                                      std::optional<double> mu) {
  if (steps < 1 || steps > 1000)
    throw InvalidArgument(
        fmt::format("{} steps is out of range: give 1 to 1000 steps", steps));
  if (c.use_dynamic_shifting && !mu)
    throw InvalidArgument(
        "the scheduler uses dynamic shifting: mu (from the image size) is "
        "needed");
  if (!(sigma_min >= 0 && sigma_min < 1))
    throw InvalidArgument(
        fmt::format("sigma_min {} must be in [0, 1)", sigma_min));
  const double n = c.num_train_timesteps;
  // sigma_max: the first of the training sigmas, shifted (1 for every shift).
  const double t_max = 1.0 * n, t_min = sigma_min * n;
  std::vector<double> s(steps);
  for (int i = 0; i < steps; ++i) {
    // numpy.linspace(t_max, t_min, steps): start + i * step, the end exact.
    const double t = steps == 1 ? t_max
                     : i == steps - 1
                         ? t_min
                         : t_max + double(i) * ((t_min - t_max) / (steps - 1));
    s[i] = t / n;
  }
  for (double& sigma : s) {
    if (c.use_dynamic_shifting) {
      // time_shift(mu, 1, sigma) = e^mu / (e^mu + (1/sigma - 1)).
      sigma =
          sigma == 0 ? 0 : std::exp(*mu) / (std::exp(*mu) + (1 / sigma - 1));
    } else {
      sigma = c.shift * sigma / (1 + (c.shift - 1) * sigma);
    }
  }
  if (c.shift_terminal) {
    if (!(s.back() < 1)) throw InvalidArgument(terminal_problem(s.size()));
    const double scale = (1 - s.back()) / (1 - *c.shift_terminal);
    for (double& sigma : s) sigma = 1 - (1 - sigma) / scale;
  }
  FlowMatchSchedule schedule;
  for (double sigma : s) {
    const float f = float(sigma);
    schedule.sigmas.push_back(f);
    schedule.timesteps.push_back(f * float(c.num_train_timesteps));
  }
  schedule.sigmas.push_back(0.0f);
  return schedule;
}

FlowMatchSchedule flow_match_schedule_from_sigmas(
    const FlowMatchConfig& c, const std::vector<float>& sigmas,
    std::optional<double> mu) {
  if (sigmas.empty() || sigmas.size() > 1000)
    throw InvalidArgument(fmt::format(
        "{} sigmas are out of range: give 1 to 1000 steps", sigmas.size()));
  if (c.use_dynamic_shifting && !mu)
    throw InvalidArgument(
        "the scheduler uses dynamic shifting: mu (from the image size) is "
        "needed");
  std::vector<float> s = sigmas;
  for (float& sigma : s) {
    if (!(sigma > 0 && sigma <= 1))
      throw InvalidArgument(
          fmt::format("sigma {} must be in (0, 1]", double(sigma)));
    // numpy on a float32 array with Python floats: float32 throughout.
    if (c.use_dynamic_shifting) {
      const float e = float(std::exp(*mu));
      sigma = e / (e + (1.0f / sigma - 1.0f));
    } else {
      sigma = float(c.shift) * sigma / (1.0f + float(c.shift - 1) * sigma);
    }
  }
  if (c.shift_terminal) {
    if (!(s.back() < 1.0f)) throw InvalidArgument(terminal_problem(s.size()));
    const float scale = float((1.0f - s.back()) / (1 - *c.shift_terminal));
    for (float& sigma : s) sigma = 1.0f - (1.0f - sigma) / scale;
  }
  FlowMatchSchedule schedule;
  for (float sigma : s) {
    schedule.sigmas.push_back(sigma);
    schedule.timesteps.push_back(sigma * float(c.num_train_timesteps));
  }
  schedule.sigmas.push_back(0.0f);
  return schedule;
}

}  // namespace mold
