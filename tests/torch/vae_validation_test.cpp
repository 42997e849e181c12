// What a VAE refuses before it runs (Vae::check_input, check_vae_job) and what
// run_vae refuses after: check_output on the result of every mode (whole,
// bounded, tiled and each rung of the ladder).
#include <catch2/catch.hpp>
#include <limits>
#include <mold/base/error.hpp>
#include <mold/cache/recovery.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/model/vae.hpp>
#include <mold/runtime/vae_runner.hpp>
#include <string>
#include <vector>

#include "support/aten_for_tests.hpp"
#include "support/test_registry.hpp"

using namespace mold;

namespace {

std::unique_ptr<Vae> make(const std::string& family) {
  const ModelFamily* f = mold::test::real_plugins().family(family);
  REQUIRE(f);
  REQUIRE(f->make_vae);
  return f->make_vae("tiny", 1);
}

/// The InvalidArgument `f` throws, as text ("" when it throws none).
template <class F> std::string refusal(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

/// A VAE whose output is chosen: the input resized (passthrough), NaN, or
/// zeros. Shapes as a real one's: 16 latent channels, 8 times smaller.
class FakeVae final : public Vae {
 public:
  enum class Output { passthrough, nan, zeros };
  explicit FakeVae(Output output) : Vae("fake"), output_(output) {
    add("weight", {1});
  }
  std::string family() const override { return "fake"; }
  at::Tensor encode(const at::Tensor& image,
                    const VaeRunOptions&) const override {
    check_input(VaeInput::image, image);
    return shape(at::avg_pool2d(image, 8)
                     .repeat({1, 6, 1, 1})
                     .narrow(1, 0, 16)
                     .contiguous());
  }
  at::Tensor decode(const at::Tensor& latent,
                    const VaeRunOptions&) const override {
    check_input(VaeInput::latent, latent);
    return shape(at::upsample_nearest2d(
        latent.narrow(1, 0, 3), {latent.size(2) * 8, latent.size(3) * 8}));
  }
  at::Tensor scale_latent(const at::Tensor& z) const override { return z; }
  at::Tensor unscale_latent(const at::Tensor& z) const override { return z; }

 private:
  at::Tensor shape(const at::Tensor& t) const {
    switch (output_) {
    case Output::nan:
      return at::full_like(t, std::numeric_limits<float>::quiet_NaN());
    case Output::zeros:
      return at::zeros_like(t);
    case Output::passthrough:
      break;
    }
    return t;
  }
  Output output_;
};

VaeJob decode_job(const at::Tensor& latent, VaeMode mode) {
  VaeJob job;
  job.op = std::string(ops::kVaeDecode);
  job.input = latent;
  job.mode = mode;
  job.tile = 4;
  job.overlap = 1;
  job.workspace_bound = 64 * kKiB;
  job.predict = false;
  return job;
}

VaeJobResult run(Vae& vae, const VaeJob& job) {
  auto cpu = CpuBackend::instance();
  return run_vae(vae, mold::test::real_plugins(), job, cpu, cpu);
}

}  // namespace

TEST_CASE("Vae::check_input takes what encode and decode take",
          "[vae][validation]") {
  for (const std::string family : {"qwen_image", "zimage"}) {
    INFO(family);
    const auto vae = make(family);
    CHECK(vae->spatial_multiple(VaeInput::image) == 8);
    CHECK(vae->spatial_multiple(VaeInput::latent) == 1);
    CHECK_NOTHROW(vae->check_input(VaeInput::image, at::zeros({2, 3, 16, 24})));
    CHECK_NOTHROW(vae->check_input(VaeInput::latent, at::zeros({1, 16, 3, 5})));
    CHECK_NOTHROW(vae->check_input(VaeInput::latent, at::zeros({1, 16, 1, 1})));

    struct Case {
      VaeInput kind;
      at::Tensor input;
      std::vector<std::string> says;
    };
    const std::string takes_latent = "the " + family +
                                     " VAE (tiny) decodes latents of shape "
                                     "(N, 16, h, w) with N >= 1 and h, w >= 1";
    const std::string takes_image =
        "the " + family +
        " VAE (tiny) encodes images of shape (N, 3, H, W) with N >= 1 and H, "
        "W positive multiples of 8";
    const std::vector<Case> cases = {
        {VaeInput::latent,
         at::zeros({1, 4, 8, 8}),
         {"the latent has shape [1, 4, 8, 8]", takes_latent,
          "4 channels, not 16; give a latent of a " + family + " VAE"}},
        {VaeInput::latent,
         at::zeros({0, 16, 8, 8}),
         {"has shape [0, 16, 8, 8]", "the batch is 0; give at least one"}},
        {VaeInput::latent,
         at::zeros({1, 16, 8, 0}),
         {"has shape [1, 16, 8, 0]", "latent 8x0 is empty; give at least 1x1"}},
        {VaeInput::latent,
         at::zeros({16, 8, 8}),
         {"has shape [16, 8, 8]", "it has 3 dimensions; give an NCHW tensor"}},
        {VaeInput::latent,
         at::zeros({1, 16, 8, 8}, at::kDouble),
         {"its dtype is Double, the weights' Float; cast it to Float"}},
        {VaeInput::latent, at::Tensor(), {"the latent is not a tensor"}},
        {VaeInput::image,
         at::zeros({1, 16, 64, 64}),
         {"the image has shape [1, 16, 64, 64]", takes_image,
          "16 channels, not 3; give RGB images"}},
        {VaeInput::image,
         at::zeros({1, 3, 0, 64}),
         {"image 0x64 is empty; give at least 8x8"}},
        {VaeInput::image,
         at::zeros({1, 3, 60, 4}),
         {"60x4 is not a multiple of 8; pad it to 64x8"}},
        {VaeInput::image,
         at::zeros({1, 3, 60, 64}),
         {"60x64 is not a multiple of 8; crop it to 56x64 or pad it to 64x64"}},
    };
    for (const auto& c : cases) {
      const std::string message =
          refusal([&] { vae->check_input(c.kind, c.input); });
      INFO(message);
      REQUIRE_FALSE(message.empty());
      for (const auto& s : c.says) CHECK_THAT(message, Catch::Contains(s));
    }
    // The name given replaces "the latent".
    CHECK_THAT(refusal([&] {
                 vae->check_input(VaeInput::latent, at::zeros({1, 4, 8, 8}),
                                  "x.safetensors: tensor 'latent'");
               }),
               Catch::StartsWith("x.safetensors: tensor 'latent' has shape "
                                 "[1, 4, 8, 8]"));

    // encode() and decode() check first: mold's message, not libtorch's.
    CHECK_THAT(refusal([&] {
                 vae->decode(at::zeros({1, 4, 8, 8}), {});
               }),
               Catch::Contains("4 channels, not 16"));
    CHECK_THAT(refusal([&] {
                 vae->decode(at::zeros({0, 16, 8, 8}), {});
               }),
               Catch::Contains("the batch is 0"));
    CHECK_THAT(refusal([&] {
                 vae->encode(at::zeros({1, 1, 64, 64}), {});
               }),
               Catch::Contains("1 channels, not 3"));
    CHECK_THAT(refusal([&] {
                 vae->encode(at::zeros({1, 3, 0, 64}), {});
               }),
               Catch::Contains("is empty"));
  }
  // Qwen-Image's latent statistics are per channel: refused, not broadcast.
  const auto qwen = make("qwen_image");
  CHECK_THAT(refusal([&] {
               qwen->unscale_latent(at::zeros({1, 4, 8, 8}));
             }),
             Catch::Contains("4 channels, not 16"));
  CHECK_THAT(refusal([&] {
               qwen->scale_latent(at::zeros({1, 4, 8, 8}));
             }),
             Catch::Contains("4 channels, not 16"));
}

TEST_CASE("check_vae_job refuses non-finite inputs unless allowed",
          "[vae][validation]") {
  const auto vae = make("zimage");
  at::manual_seed(3);
  at::Tensor latent = at::randn({1, 16, 4, 4});
  latent.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
  latent.view(-1)[1] = std::numeric_limits<float>::infinity();
  latent.view(-1)[2] = -std::numeric_limits<float>::infinity();
  VaeJob job = decode_job(latent, VaeMode::whole);
  job.input_name = "x.safetensors: tensor 'latent'";
  try {
    check_vae_job(*vae, job);
    FAIL("a non-finite input was taken");
  } catch (const NonFiniteInput& e) {
    CHECK(e.count() == 3);
    CHECK_THAT(e.what(),
               Catch::StartsWith("x.safetensors: tensor 'latent' has 3 of its "
                                 "256 values not finite (1 NaN, 2 Inf)"));
  }
  // run_vae checks first, for every caller; an InvalidArgument.
  CHECK_THROWS_AS(run(*vae, job), NonFiniteInput);
  CHECK_THROWS_AS(run(*vae, decode_job(latent, VaeMode::ladder)),
                  InvalidArgument);
  // Large finite values whose float sum would overflow are finite.
  job.input = at::full({1, 16, 4, 4}, 3e38f);
  CHECK_NOTHROW(check_vae_job(*vae, job));

  job.input = latent;
  job.allow_nonfinite = true;
  CHECK_NOTHROW(check_vae_job(*vae, job));
  // Let through: NaN in, NaN out, no InvalidOutput.
  const VaeJobResult result = run(*vae, job);
  CHECK(at::isnan(result.output).any().item<bool>());

  job.op = "denoise";
  CHECK_THAT(refusal([&] { check_vae_job(*vae, job); }),
             Catch::Contains("a VAE runs vae_encode or vae_decode, not "
                             "'denoise'"));
  job = decode_job(at::zeros({1, 16, 0, 4}), VaeMode::tiled);
  CHECK_THAT(refusal([&] { run(*vae, job); }),
             Catch::Contains("the latent has shape [1, 16, 0, 4]"));
}

TEST_CASE("run_vae checks the output of every mode", "[vae][validation]") {
  at::manual_seed(4);
  const at::Tensor latent = at::randn({1, 16, 8, 8});
  const std::vector<std::pair<VaeMode, std::string>> modes = {
      {VaeMode::whole, "whole"},
      {VaeMode::bounded, "bounded"},
      {VaeMode::tiled, "tiles_4"}};

  FakeVae good(FakeVae::Output::passthrough);
  for (const auto& [mode, rung] : modes) {
    INFO(rung);
    const VaeJobResult r = run(good, decode_job(latent, mode));
    CHECK(r.rung == rung);
    CHECK(r.output.sizes() == at::IntArrayRef({1, 3, 64, 64}));
  }

  for (const auto output : {FakeVae::Output::nan, FakeVae::Output::zeros}) {
    FakeVae bad(output);
    const std::string says = output == FakeVae::Output::nan
                                 ? "has non-finite values"
                                 : "silent zero output";
    for (const auto& [mode, rung] : modes) {
      INFO(rung << ": " << says);
      try {
        run(bad, decode_job(latent, mode));
        FAIL("an invalid output was taken");
      } catch (const InvalidOutput& e) {
        CHECK_THAT(e.what(), Catch::StartsWith("vae_decode (" + rung +
                                               ") gave no valid result: "));
        CHECK_THAT(e.what(), Catch::Contains(says));
      }
    }
    // An encode too.
    VaeJob encode =
        decode_job(at::rand({1, 3, 64, 64}) * 2 - 1, VaeMode::whole);
    encode.op = std::string(ops::kVaeEncode);
    CHECK_THROWS_AS(run(bad, encode), InvalidOutput);
    // The ladder: every rung's output checked, every rung invalid.
    try {
      run(bad, decode_job(latent, VaeMode::ladder));
      FAIL("the ladder took an invalid output");
    } catch (const RecoveryFailed& e) {
      REQUIRE(e.attempts().size() == 6);
      for (const auto& a : e.attempts()) {
        INFO(a.rung);
        CHECK(a.outcome == RecoveryAttempt::Outcome::invalid_output);
        CHECK_THAT(a.error, Catch::Contains(says));
      }
    }
  }

  // An allowed non-finite input may give a non-finite output, never a silent
  // zero one.
  at::Tensor with_nan = latent.clone();
  with_nan.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
  FakeVae nan_vae(FakeVae::Output::nan);
  FakeVae zero_vae(FakeVae::Output::zeros);
  for (const auto& [mode, rung] : modes) {
    INFO(rung);
    VaeJob job = decode_job(with_nan, mode);
    job.allow_nonfinite = true;
    CHECK_NOTHROW(run(nan_vae, job));
    CHECK_THROWS_WITH(run(zero_vae, job),
                      Catch::Contains("silent zero output"));
  }
  // All zeros from all zeros is a result.
  FakeVae zeros(FakeVae::Output::zeros);
  CHECK_NOTHROW(
      run(zeros, decode_job(at::zeros({1, 16, 8, 8}), VaeMode::whole)));
}
