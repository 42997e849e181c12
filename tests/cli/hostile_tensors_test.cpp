// Tensors a VAE cannot take, given to the real molddiag: NaN and Inf values,
// empty dimensions, the wrong channels; and the cpu backend running out of
// memory under --cpu-memory-limit. Every case is refused with a message naming
// the file, the tensor and what to do, never a C++ backtrace.
//
// Exit codes: an input the VAE does not take is refused like a bad flag value
// (mold::InvalidArgument, exit 2, without the --help hint: the flags were
// right); an out-of-memory error is a failure (exit 1) printed as `molddiag
// classify` prints one, the label first and then the hints.
#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>
#include <mold/tensor/safetensors.hpp>
#include <string>
#include <vector>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

using mold::test::run_molddiag;

namespace {

/// Checks that no line of `err` is a frame or the head of a C++ backtrace.
void check_no_backtrace(const std::string& err) {
  CHECK_THAT(err, !Catch::Contains("frame #"));
  CHECK_THAT(err, !Catch::Contains("Exception raised from"));
}

std::vector<std::string> decode_args(const std::string& family,
                                     const std::string& input,
                                     const std::string& output) {
  return {"vae",    "decode", "--family", family, "--arch",   "tiny",
          "--seed", "3",      "--input",  input,  "--output", output};
}

std::vector<std::string> operator+(std::vector<std::string> a,
                                   const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("molddiag vae refuses NaN and Inf inputs, naming the file",
          "[cli][vae][hostile]") {
  TempDir dir;
  at::manual_seed(21);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  at::Tensor with_nan = at::randn({1, 16, 4, 4});
  with_nan.view(-1)[3] = nan;
  with_nan.view(-1)[7] = nan;
  at::Tensor with_inf = at::randn({1, 16, 4, 4});
  with_inf.view(-1)[5] = -inf;
  const std::string nan_file = dir.path() + "/nan.safetensors";
  const std::string inf_file = dir.path() + "/inf.safetensors";
  mold::save_safetensors(nan_file, {{"latent", with_nan}});
  mold::save_safetensors(inf_file, {{"latent", with_inf}});
  const std::string out = dir.path() + "/out.safetensors";

  for (const std::string family : {"qwen_image", "zimage"}) {
    INFO(family);
    for (const std::string mode : {"whole", "tiled", "ladder"}) {
      INFO(mode);
      auto r = run_molddiag(decode_args(family, nan_file, out) +
                            std::vector<std::string>{"--mode", mode});
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK_THAT(r.err, Catch::StartsWith("molddiag vae: " + nan_file +
                                          ": tensor 'latent' has 2 of its 256 "
                                          "values not finite (2 NaN, 0 Inf)"));
      CHECK_THAT(r.err, Catch::Contains("--allow-nonfinite runs it anyway"));
      CHECK_THAT(r.err, !Catch::Contains("--help"));
      check_no_backtrace(r.err);
      CHECK_FALSE(std::filesystem::exists(out));
    }
    auto r = run_molddiag(decode_args(family, inf_file, out));
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err,
               Catch::Contains(inf_file + ": tensor 'latent' has 1 of its 256 "
                                          "values not finite (0 NaN, 1 Inf)"));
    check_no_backtrace(r.err);
    CHECK_FALSE(std::filesystem::exists(out));

    // --allow-nonfinite lets them through: NaN in, NaN out, exit 0.
    r = run_molddiag(decode_args(family, nan_file, out) +
                     std::vector<std::string>{"--allow-nonfinite"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const at::Tensor decoded =
        mold::SafetensorsFile::open(out).tensor("sample");
    CHECK(decoded.sizes() == at::IntArrayRef({1, 3, 32, 32}));
    CHECK(at::isnan(decoded).any().item<bool>());
    std::filesystem::remove(out);
  }

  // An image to encode, too.
  at::Tensor image = at::rand({1, 3, 16, 16}) * 2 - 1;
  image.view(-1)[0] = nan;
  const std::string image_file = dir.path() + "/image.safetensors";
  mold::save_safetensors(image_file, {{"sample", image}});
  const auto r = run_molddiag({"vae", "encode", "--family", "zimage", "--arch",
                               "tiny", "--input", image_file, "--output", out});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains(image_file + ": tensor 'sample' has 1 of its 768 "
                                          "values not finite (1 NaN, 0 Inf)"));
  check_no_backtrace(r.err);
}

TEST_CASE(
    "molddiag vae refuses empty dimensions and wrong channels, naming the "
    "expected and the given shape",
    "[cli][vae][hostile]") {
  TempDir dir;
  at::manual_seed(22);
  struct Case {
    std::string op, tensor_name;
    std::vector<int64_t> shape;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"decode",
       "latent",
       {1, 16, 0, 4},
       {"has shape [1, 16, 0, 4]", "latent 0x4 is empty"}},
      {"decode",
       "latent",
       {0, 16, 4, 4},
       {"has shape [0, 16, 4, 4]", "the batch is 0"}},
      {"decode",
       "latent",
       {1, 4, 4, 4},
       {"has shape [1, 4, 4, 4]", "latents of shape (N, 16, h, w)",
        "4 channels, not 16"}},
      {"decode",
       "latent",
       {16, 4, 4},
       {"has shape [16, 4, 4]", "it has 3 dimensions"}},
      {"encode",
       "sample",
       {1, 4, 16, 16},
       {"has shape [1, 4, 16, 16]", "images of shape (N, 3, H, W)",
        "4 channels, not 3"}},
      {"encode",
       "sample",
       {1, 3, 0, 16},
       {"has shape [1, 3, 0, 16]", "image 0x16 is empty"}},
      {"encode",
       "sample",
       {1, 3, 60, 60},
       {"60x60 is not a multiple of 8; crop it to 56x56 or pad it to 64x64"}},
  };
  const std::string out = dir.path() + "/out.safetensors";
  int index = 0;
  for (const auto& c : cases) {
    const std::string file =
        dir.path() + "/case" + std::to_string(index++) + ".safetensors";
    mold::save_safetensors(file, {{c.tensor_name, at::randn(c.shape)}});
    for (const std::string family : {"qwen_image", "zimage"}) {
      INFO(family << " " << c.op << " " << file);
      const auto r = run_molddiag({"vae", c.op, "--family", family, "--arch",
                                   "tiny", "--input", file, "--output", out});
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK_THAT(r.err, Catch::StartsWith("molddiag vae: " + file +
                                          ": tensor '" + c.tensor_name + "'"));
      CHECK_THAT(r.err, Catch::Contains("the " + family + " VAE (tiny)"));
      for (const auto& s : c.says) CHECK_THAT(r.err, Catch::Contains(s));
      check_no_backtrace(r.err);
      CHECK_FALSE(std::filesystem::exists(out));
    }
  }
}

TEST_CASE(
    "a cpu out-of-memory error is classified and advised, without a "
    "backtrace",
    "[cli][vae][hostile][oom]") {
  TempDir dir;
  at::manual_seed(23);
  const std::string latent = dir.path() + "/latent.safetensors";
  mold::save_safetensors(latent, {{"latent", at::randn({1, 16, 32, 32})}});
  const std::string out = dir.path() + "/out.safetensors";
  const std::vector<std::string> limit{"--cpu-memory-limit", "12 MiB"};

  struct Case {
    std::string command;
    std::vector<std::string> args;
    std::string own_hint;
  };
  const std::vector<Case> cases = {
      {"vae", decode_args("qwen_image", latent, out) + limit,
       "--mode ladder retries it"},
      {"tiling",
       std::vector<std::string>{"tiling", "--family", "zimage", "--arch",
                                "tiny", "--size", "256"} +
           limit,
       "a smaller --size"},
      {"calibrate",
       std::vector<std::string>{"calibrate", "--family", "zimage", "--op",
                                "vae_decode", "--arch", "tiny", "--sizes",
                                "256"} +
           limit,
       "smaller --sizes"},
  };
  for (const auto& c : cases) {
    INFO(c.command);
    auto r = run_molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    // The label first, as `molddiag classify` prints it, then the hints.
    CHECK_THAT(r.err, Catch::StartsWith("molddiag " + c.command +
                                        ": CPU out of memory"));
    CHECK_THAT(r.err, Catch::Contains("Tried to allocate"));
    CHECK_THAT(r.err, Catch::Contains("\nTry:\n"));
    CHECK_THAT(r.err, Catch::Contains("raise --cpu-memory-limit"));
    CHECK_THAT(r.err, Catch::Contains(c.own_hint));
    check_no_backtrace(r.err);
    CHECK_FALSE(std::filesystem::exists(out));

    // --verbose keeps libtorch's full text.
    r = run_molddiag(c.args + std::vector<std::string>{"--verbose"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("CPU out of memory"));
    CHECK_THAT(r.err, Catch::Contains("Exception raised from"));
  }

  // The ladder: every rung out of memory, then the last error advised.
  const auto r =
      run_molddiag(decode_args("qwen_image", latent, out) +
                   std::vector<std::string>{"--mode", "ladder",
                                            "--cpu-memory-limit", "6 MiB"});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("molddiag vae: vae_decode failed on "
                                      "every way to run it:\n  whole: "
                                      "out_of_memory (CPU out of memory."));
  CHECK_THAT(r.err, Catch::Contains("\n  cpu: out_of_memory"));
  CHECK_THAT(r.err, Catch::Contains(
                        "The last out-of-memory error: CPU out of memory"));
  CHECK_THAT(r.err, Catch::Contains("raise --cpu-memory-limit"));
  CHECK_THAT(r.err, !Catch::Contains("--mode ladder retries it"));
  check_no_backtrace(r.err);
  CHECK_FALSE(std::filesystem::exists(out));
}
