// The flow-matching Euler schedule against values computed from diffusers'
// FlowMatchEulerDiscreteScheduler formulas (numpy.linspace from 1000 to
// sigma_min * 1000, / 1000, shifted) for Z-Image-Turbo's config.

#include <catch2/catch.hpp>
#include <mold/base/error.hpp>
#include <mold/config/json_config.hpp>
#include <mold/model/scheduler.hpp>

using mold::FlowMatchConfig;

TEST_CASE("Z-Image-Turbo's 9-step schedule: shift 3, ending at 0",
          "[scheduler]") {
  const auto schedule =
      mold::flow_match_schedule(FlowMatchConfig::zimage_turbo(), 9, 0.0);
  const std::vector<double> expected = {
      1.0,  0.9545454545454546, 0.9, 0.8333333333333334,
      0.75, 0.6428571428571429, 0.5, 0.3,
      0.0};
  REQUIRE(schedule.steps() == 9);
  REQUIRE(schedule.sigmas.size() == 10);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(schedule.sigmas[i] == float(expected[i]));
    CHECK(schedule.timesteps[i] == float(expected[i]) * 1000.0f);
  }
  CHECK(schedule.sigmas.back() == 0.0f);
  // The last step goes from 0 to 0: the pipeline skips its model call.
  CHECK(schedule.delta(8) == 0.0f);
  CHECK(schedule.delta(0) == 0.9545454545454546f - 1.0f);
}

TEST_CASE("Dynamic shifting uses mu from the image tokens", "[scheduler]") {
  FlowMatchConfig config;
  config.use_dynamic_shifting = true;
  const double mu = mold::flow_match_mu(config, 1024);
  CHECK(mu == Approx(0.63).epsilon(1e-12));
  const auto schedule = mold::flow_match_schedule(config, 9, 0.0, mu);
  CHECK(schedule.sigmas[1] == float(0.9292950135787651));
  CHECK(schedule.sigmas[7] == float(0.2114995428668526));
  CHECK(schedule.sigmas[8] == 0.0f);
  CHECK_THROWS_WITH(mold::flow_match_schedule(config, 9, 0.0),
                    Catch::Contains("mu"));
}

TEST_CASE("Schedules refuse what they cannot do", "[scheduler]") {
  CHECK_THROWS_WITH(
      mold::flow_match_schedule(FlowMatchConfig::zimage_turbo(), 0, 0.0),
      Catch::Contains("0 steps is out of range"));
  CHECK_THROWS_AS(
      mold::flow_match_schedule(FlowMatchConfig::zimage_turbo(), 1001, 0.0),
      mold::InvalidArgument);
  const auto one =
      mold::flow_match_schedule(FlowMatchConfig::zimage_turbo(), 1, 0.0);
  CHECK(one.sigmas == std::vector<float>{1.0f, 0.0f});
}

TEST_CASE("scheduler_config.json: values read, unsupported options named",
          "[scheduler][config]") {
  const auto config = FlowMatchConfig::from_json(mold::JsonConfig::parse(
      R"({"_class_name": "FlowMatchEulerDiscreteScheduler",
          "num_train_timesteps": 1000, "shift": 3.0,
          "use_dynamic_shifting": false})",
      "scheduler_config.json"));
  CHECK(config.shift == 3.0);
  CHECK_FALSE(config.use_dynamic_shifting);
  CHECK_THROWS_WITH(
      FlowMatchConfig::from_json(mold::JsonConfig::parse(
          R"({"use_karras_sigmas": true})", "scheduler_config.json")),
      Catch::Contains("scheduler_config.json") &&
          Catch::Contains("use_karras_sigmas"));
  CHECK_THROWS_WITH(
      FlowMatchConfig::from_json(mold::JsonConfig::parse(
          R"({"stochastic_sampling": true})", "scheduler_config.json")),
      Catch::Contains("stochastic_sampling"));
  CHECK_THROWS_WITH(
      FlowMatchConfig::from_json(mold::JsonConfig::parse(
          R"({"time_shift_type": "linear"})", "scheduler_config.json")),
      Catch::Contains("time_shift_type") && Catch::Contains("\"linear\""));
  // Qwen-Image's published config names the defaults.
  CHECK_NOTHROW(FlowMatchConfig::from_json(mold::JsonConfig::parse(
      R"({"time_shift_type": "exponential", "stochastic_sampling": false})",
      "scheduler_config.json")));
  CHECK_THROWS_WITH(FlowMatchConfig::from_json(mold::JsonConfig::parse(
                        R"({"shift": "3"})", "scheduler_config.json")),
                    Catch::Contains("shift") && Catch::Contains("a string"));
  CHECK_THROWS_WITH(FlowMatchConfig::from_json(mold::JsonConfig::parse(
                        R"({"shift": -1})", "scheduler_config.json")),
                    Catch::Contains("0 < shift <= 10000"));
  // Far out of range: the sigmas would be NaN in float32.
  CHECK_THROWS_WITH(
      FlowMatchConfig::from_json(mold::JsonConfig::parse(
          R"({"shift": 1e308})", "scheduler_config.json")),
      Catch::Contains("key 'shift'") && Catch::Contains("0 < shift <= 10000"));
  CHECK_THROWS_WITH(
      FlowMatchConfig::from_json(mold::JsonConfig::parse(
          R"({"max_shift": 900})", "scheduler_config.json")),
      Catch::Contains("key 'max_shift'") && Catch::Contains("-20 to 20"));
  // Another scheduler would be run as this one: refused by name.
  CHECK_THROWS_WITH(FlowMatchConfig::from_json(mold::JsonConfig::parse(
                        R"({"_class_name": "EulerDiscreteScheduler"})",
                        "scheduler_config.json")),
                    Catch::Contains("key '_class_name'") &&
                        Catch::Contains("EulerDiscreteScheduler"));
  CHECK_THROWS_WITH(FlowMatchConfig::from_json(mold::JsonConfig::parse(
                        R"({"base_shift": null})", "scheduler_config.json")),
                    Catch::Contains("key 'base_shift': is null"));
  // shift_terminal 0 is off, as diffusers reads it.
  CHECK_FALSE(FlowMatchConfig::from_json(
                  mold::JsonConfig::parse(R"({"shift_terminal": 0})",
                                          "scheduler_config.json"))
                  .shift_terminal);
  CHECK(*FlowMatchConfig::from_json(
             mold::JsonConfig::parse(R"({"shift_terminal": 0.02})",
                                     "scheduler_config.json"))
             .shift_terminal == 0.02);
}

TEST_CASE("Z-Image's own sigmas: linspace(1, 1/8, 8), shifted, in float32",
          "[scheduler]") {
  // diffusers' ZImagePipeline passes sigmas = linspace(1, 1/steps, steps)
  // to set_timesteps(sigmas=...); the values below are what its
  // FlowMatchEulerDiscreteScheduler then holds (float32), and the same 8
  // model evaluations as the 9-step schedule ending at sigma 0 above.
  const std::vector<float> linspace = {1.0f, 0.875f, 0.75f, 0.625f,
                                       0.5f, 0.375f, 0.25f, 0.125f};
  const auto schedule = mold::flow_match_schedule_from_sigmas(
      FlowMatchConfig::zimage_turbo(), linspace);
  const std::vector<float> expected = {1.0f,       0.95454544f, 0.9f,
                                       0.8333333f, 0.75f,       0.64285713f,
                                       0.5f,       0.3f,        0.0f};
  CHECK(schedule.sigmas == expected);
  REQUIRE(schedule.steps() == 8);
  CHECK(schedule.timesteps[1] == 954.54541015625f);
  const auto nine =
      mold::flow_match_schedule(FlowMatchConfig::zimage_turbo(), 9, 0.0);
  for (int i = 0; i < 8; ++i) CHECK(schedule.sigmas[i] == nine.sigmas[i]);

  // Two steps: 1 -> 0.75 -> 0 (not 1 -> 0 -> 0).
  CHECK(mold::flow_match_schedule_from_sigmas(FlowMatchConfig::zimage_turbo(),
                                              {1.0f, 0.5f})
            .sigmas == std::vector<float>{1.0f, 0.75f, 0.0f});

  FlowMatchConfig dynamic;
  dynamic.use_dynamic_shifting = true;
  const auto shifted = mold::flow_match_schedule_from_sigmas(
      dynamic, linspace, mold::flow_match_mu(dynamic, 1024));
  CHECK(shifted.sigmas[1] == Approx(0.929295f).epsilon(1e-7));
  CHECK(shifted.sigmas[7] == Approx(0.21149956f).epsilon(1e-7));
  CHECK_THROWS_WITH(mold::flow_match_schedule_from_sigmas(dynamic, linspace),
                    Catch::Contains("mu"));
  CHECK_THROWS_AS(mold::flow_match_schedule_from_sigmas(
                      FlowMatchConfig::zimage_turbo(), {}),
                  mold::InvalidArgument);
  CHECK_THROWS_AS(mold::flow_match_schedule_from_sigmas(
                      FlowMatchConfig::zimage_turbo(), {1.0f, 0.0f}),
                  mold::InvalidArgument);
}
