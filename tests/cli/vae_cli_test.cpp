// molddiag vae and tiling, run as the real binary on real files.
#include <catch2/catch.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

namespace {
mold::test::ProcessResult molddiag(const std::vector<std::string>& args) {
  static TempDir home;
  return run_process(kMolddiag, args, mold::test::isolated_env(home));
}
}  // namespace

TEST_CASE("molddiag vae encodes and decodes files; modes agree", "[cli][vae]") {
  TempDir dir;
  at::manual_seed(9);
  const std::string image = dir.path() + "/image.safetensors";
  mold::save_safetensors(image, {{"sample", at::rand({1, 3, 64, 64}) * 2 - 1}});
  for (const std::string family : {"qwen_image", "zimage"}) {
    INFO(family);
    const std::string latent =
        dir.path() + "/" + family + "-latent.safetensors";
    auto r = molddiag({"vae", "encode", "--family", family, "--arch", "tiny",
                       "--seed", "5", "--input", image, "--output", latent,
                       "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["rung"] == "whole");
    CHECK(j["shape"] == std::vector<int64_t>{1, 16, 8, 8});
    const at::Tensor z = mold::SafetensorsFile::open(latent).tensor("latent");
    CHECK(z.sizes() == at::IntArrayRef({1, 16, 8, 8}));

    std::map<std::string, at::Tensor> decoded;
    for (const std::string mode : {"whole", "bounded", "ladder"}) {
      const std::string out =
          dir.path() + "/" + family + "-" + mode + ".safetensors";
      r = molddiag({"vae", "decode", "--family", family, "--arch", "tiny",
                    "--seed", "5", "--input", latent, "--output", out, "--mode",
                    mode, "--workspace", "32 KiB"});
      INFO(mode << ": " << r.err);
      REQUIRE(r.exit_code == 0);
      decoded[mode] = mold::SafetensorsFile::open(out).tensor("sample");
      CHECK(decoded[mode].sizes() == at::IntArrayRef({1, 3, 64, 64}));
    }
    const auto rel = [&](const char* mode) {
      return (decoded[mode] - decoded["whole"]).norm().item<double>() /
             decoded["whole"].norm().item<double>();
    };
    CHECK(rel("bounded") <= 1e-5);
    CHECK(rel("ladder") == 0.0);  // the whole rung fits: the same run
  }
}

TEST_CASE(
    "the ladder recovers under a cpu memory limit the whole decode cannot fit",
    "[cli][vae][recovery]") {
  TempDir dir;
  at::manual_seed(10);
  const std::string latent = dir.path() + "/latent.safetensors";
  mold::save_safetensors(latent, {{"latent", at::randn({1, 16, 32, 32})}});
  const std::string out = dir.path() + "/image.safetensors";
  const std::vector<std::string> base{
      "vae",      "decode", "--family", "qwen_image",
      "--arch",   "tiny",   "--input",  latent,
      "--output", out,      "--json",   "--cpu-memory-limit",
      "12 MiB"};
  // Whole, the decode needs about 14 MiB: it fails, classified.
  auto args = base;
  args.insert(args.end(), {"--mode", "whole"});
  auto r = molddiag(args);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("CPU out of memory"));
  CHECK_FALSE(std::filesystem::exists(out));  // nothing half-written

  args = base;
  args.insert(args.end(), {"--mode", "ladder"});
  r = molddiag(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rung"] == "tiles_16");
  REQUIRE(j["attempts"].size() >= 2);
  CHECK(j["attempts"][0]["rung"] == "whole");
  CHECK(j["attempts"][0]["outcome"] == "out_of_memory");
  CHECK(j["attempts"].back()["outcome"] == "succeeded");
  CHECK(mold::SafetensorsFile::open(out).tensor("sample").sizes() ==
        at::IntArrayRef({1, 3, 256, 256}));
}

TEST_CASE("molddiag vae and tiling: usage errors and bad files", "[cli][vae]") {
  TempDir dir;
  const std::string text = dir.write("not.safetensors", "plain text");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    const char* message;
  };
  const Case cases[] = {
      {{"vae", "--family", "zimage"}, 2, "molddiag vae encode"},
      {{"vae", "decode", "--family", "zimage", "--input", text},
       2,
       "--output is required"},
      {{"vae", "decode", "--family", "zimage", "--arch", "tiny", "--input",
        text, "--output", dir.path() + "/o.safetensors"},
       1,
       "not.safetensors: truncated, or not a safetensors file"},
      {{"vae", "decode", "--family", "zimage", "--mode", "fast", "--input",
        text, "--output", "o"},
       2,
       "unknown mode 'fast'"},
      {{"vae", "decode", "--family", "sdxl", "--input", text, "--output", "o"},
       1,
       "no family 'sdxl'"},
      {{"tiling", "--family", "zimage", "--size", "100"}, 2, "multiple of 8"},
      {{"tiling"}, 2, "--family is required"},
  };
  for (const auto& c : cases) {
    const auto r = molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}

TEST_CASE("molddiag tiling reports every run", "[cli][vae]") {
  const auto r = molddiag({"tiling", "--family", "zimage", "--arch", "tiny",
                           "--size", "64", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["runs"].size() == 4);
  CHECK(j["runs"][0]["name"] == "whole");
  CHECK(j["runs"][0]["relative_l2"] == 0.0);
  CHECK(j["runs"][1]["relative_l2"].get<double>() <= 1e-5);
  CHECK(j["runs"][2]["quadrants"].size() == 4);
  CHECK(j["runs"][2]["peak_bytes"].get<double>() <
        j["runs"][0]["peak_bytes"].get<double>());
}
