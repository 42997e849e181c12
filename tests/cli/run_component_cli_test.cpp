// molddiag run-component, the real binary: each component of the tiny
// Z-Image on tensors from a file, seeded or from a checkpoint, and its
// failure paths.

#include <catch2/catch.hpp>
#include <filesystem>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "support/aten_for_tests.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::run_molddiag;
using mold::test::TempDir;

TEST_CASE("run-component runs each tiny Z-Image component",
          "[run_component][cli]") {
  TempDir dir;
  const std::string in = dir.path() + "/in.safetensors";
  const std::string out = dir.path() + "/out.safetensors";
  mold::save_safetensors(
      in, {{"input_ids", at::randint(0, 151936, {2, 7}, at::kLong)},
           {"attention_mask", at::ones({2, 7}, at::kLong)},
           {"latents", at::randn({1, 16, 8, 6})},
           {"timestep", at::full({1}, 0.25)},
           {"text", at::randn({1, 5, 32})},
           {"latent", at::randn({1, 16, 4, 4})},
           {"sample", at::rand({1, 3, 16, 16}) * 2 - 1}});
  auto run = [&](const std::string& component) {
    return run_molddiag({"run-component", "--family", "zimage", "--component",
                         component, "--input", in, "--output", out, "--json"});
  };
  auto r = run("text_encoder");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["tensors"]["hidden_states"] ==
        nlohmann::json({2, 7, 32}));
  const at::Tensor first =
      mold::SafetensorsFile::open(out).tensor("hidden_states");
  r = run("text_encoder");  // seeded: the same output again
  CHECK(at::equal(first,
                  mold::SafetensorsFile::open(out).tensor("hidden_states")));

  r = run("transformer");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(mold::SafetensorsFile::open(out).entry("output").shape ==
        std::vector<int64_t>{1, 16, 8, 6});
  r = run("vae_decoder");
  REQUIRE(r.exit_code == 0);
  CHECK(mold::SafetensorsFile::open(out).entry("sample").shape ==
        std::vector<int64_t>{1, 3, 32, 32});
  r = run("vae_encoder");
  REQUIRE(r.exit_code == 0);
  CHECK(mold::SafetensorsFile::open(out).entry("latent").shape ==
        std::vector<int64_t>{1, 16, 2, 2});

  // Another seed, other weights.
  r = run_molddiag({"run-component", "--family", "zimage", "--component",
                    "text_encoder", "--input", in, "--output", out, "--seed",
                    "5"});
  REQUIRE(r.exit_code == 0);
  const at::Tensor seeded5 =
      mold::SafetensorsFile::open(out).tensor("hidden_states");
  CHECK_FALSE(at::equal(seeded5, first));
}

TEST_CASE("run-component errors name what is wrong", "[run_component][cli]") {
  TempDir dir;
  const std::string in = dir.path() + "/in.safetensors";
  mold::save_safetensors(in, {{"latents", at::randn({1, 16, 8, 8})}});
  auto r = run_molddiag({"run-component", "--family", "zimage", "--component",
                         "text_encoder", "--input", in, "--output",
                         dir.path() + "/o.safetensors"});
  CHECK(r.exit_code == 2);  // bad input, as a bad flag
  CHECK_THAT(r.err, Catch::Contains("no tensor 'input_ids'") &&
                        Catch::Contains("latents"));
  CHECK_FALSE(fs::exists(dir.path() + "/o.safetensors"));
  r = run_molddiag({"run-component", "--family", "zimage", "--component",
                    "unet", "--input", in, "--output", "o.safetensors"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--component unet"));
  r = run_molddiag({"run-component", "--family", "nope", "--component",
                    "transformer", "--input", in, "--output", "o.safetensors"});
  CHECK(r.exit_code == 1);  // as every command that looks a family up
  CHECK_THAT(r.err, Catch::Contains("no family 'nope' is registered") &&
                        Catch::Contains("zimage"));
  r = run_molddiag({"run-component", "--family", "zimage", "--component",
                    "transformer", "--arch", dir.path() + "/absent.json",
                    "--input", in, "--output", "o.safetensors"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("absent.json"));
}
