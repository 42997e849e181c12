// molddiag vae, tiling and calibrate, run as the real binary on real files.
#include <catch2/catch.hpp>
#include <iterator>
#include <map>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

using mold::test::run_molddiag;

namespace {}  // namespace

TEST_CASE("molddiag vae encodes and decodes files in every mode",
          "[cli][vae]") {
  TempDir dir;
  at::manual_seed(9);
  const std::string image = dir.path() + "/image.safetensors";
  mold::save_safetensors(image, {{"sample", at::rand({1, 3, 64, 64}) * 2 - 1}});
  for (const std::string family : {"qwen_image", "zimage"}) {
    INFO(family);
    const std::string latent =
        dir.path() + "/" + family + "-latent.safetensors";
    auto r = run_molddiag({"vae", "encode", "--family", family, "--arch",
                           "tiny", "--seed", "5", "--input", image, "--output",
                           latent, "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["rung"] == "whole");
    CHECK(j["shape"] == std::vector<int64_t>{1, 16, 8, 8});
    const at::Tensor z = mold::SafetensorsFile::open(latent).tensor("latent");
    CHECK(z.sizes() == at::IntArrayRef({1, 16, 8, 8}));

    CHECK(j["arch"] == "tiny");
    CHECK_FALSE(j.contains("config"));  // the key is "arch", as the flag

    // Every mode; tiled in 4-latent tiles, so that the 8x8 latent is split.
    const std::map<std::string, std::string> rungs = {{"whole", "whole"},
                                                      {"bounded", "bounded"},
                                                      {"tiled", "tiles_4"},
                                                      {"ladder", "whole"}};
    std::map<std::string, at::Tensor> decoded;
    for (const auto& [mode, rung] : rungs) {
      const std::string out =
          dir.path() + "/" + family + "-" + mode + ".safetensors";
      r = run_molddiag(
          {"vae",       "decode", "--family",    family,   "--arch",   "tiny",
           "--seed",    "5",      "--input",     latent,   "--output", out,
           "--mode",    mode,     "--workspace", "32 KiB", "--tile",   "4",
           "--overlap", "1",      "--json"});
      INFO(mode << ": " << r.err);
      REQUIRE(r.exit_code == 0);
      const auto d = nlohmann::json::parse(r.out);
      CHECK(d["mode"] == mode);
      CHECK(d["rung"] == rung);
      CHECK(d["arch"] == "tiny");
      CHECK(d["shape"] == std::vector<int64_t>{1, 3, 64, 64});
      CHECK(d["attempts"].size() == (mode == "ladder" ? 1u : 0u));
      decoded[mode] = mold::SafetensorsFile::open(out).tensor("sample");
      CHECK(decoded[mode].sizes() == at::IntArrayRef({1, 3, 64, 64}));
    }
    const auto rel = [&](const char* mode) {
      return (decoded[mode] - decoded["whole"]).norm().item<double>() /
             decoded["whole"].norm().item<double>();
    };
    CHECK(rel("bounded") <= 1e-5);
    CHECK(rel("ladder") == 0.0);  // the whole rung fits: the same run
    // Tiles of random weights differ from the whole decode, but not wildly.
    CHECK(rel("tiled") > 0.0);
    CHECK(rel("tiled") < 10.0);
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
  auto r = run_molddiag(args);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("CPU out of memory"));
  CHECK_FALSE(std::filesystem::exists(out));  // nothing half-written

  args = base;
  args.insert(args.end(), {"--mode", "ladder"});
  r = run_molddiag(args);
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

TEST_CASE("molddiag vae, tiling and calibrate: usage errors and bad files",
          "[cli][vae]") {
  TempDir dir;
  const std::string text = dir.write("not.safetensors", "plain text");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    const char* message;
  };
  const std::string vae_files[] = {"--input", text, "--output", "o"};
  const auto vae = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"vae", "decode", "--family", "zimage"});
    args.insert(args.end(), std::begin(vae_files), std::end(vae_files));
    return args;
  };
  const Case cases[] = {
      {{"vae", "--family", "zimage"},
       2,
       "say what to do: molddiag vae encode ... or molddiag vae decode ..."},
      {{"vae", "decode", "--family", "zimage", "--input", text},
       2,
       "--output is required"},
      {{"vae", "decode", "--input", text, "--output", "o"},
       2,
       "--family is required"},
      {{"vae", "decode", "--family", "zimage", "--arch", "tiny", "--input",
        text, "--output", dir.path() + "/o.safetensors"},
       1,
       "not.safetensors: truncated, or not a safetensors file"},
      {vae({"--mode", "fast"}), 2, "unknown mode 'fast'"},
      {vae({"--blend", "cubic"}), 2, "unknown blend 'cubic'"},
      {vae({"--workspace", "lots"}), 2, "'lots' is not a byte count"},
      {vae({"--tile", "8", "--overlap", "8"}), 2,
       "--tile 8 --overlap 8: the tile must be positive and larger than the "
       "overlap"},
      {vae({"--seed", "ten"}), 2,
       "--seed 'ten' is not a seed: give a whole number from 0 to "
       "18446744073709551615"},
      {{"vae", "decode", "--family", "sdxl", "--input", text, "--output", "o"},
       1,
       "no family 'sdxl'"},
      {{"tiling", "--family", "zimage", "--size", "100"},
       2,
       "--size 100 must be a positive multiple of 8"},
      {{"tiling"}, 2, "--family is required"},
      {{"tiling", "--family", "zimage", "--mkldnn", "maybe"},
       2,
       "--mkldnn takes on or off"},
      {{"tiling", "--family", "zimage", "--tile", "2", "--overlap", "4"},
       2,
       "--tile 2 must be larger than --overlap 4"},
      {{"tiling", "--family", "zimage", "--workspace", "lots"},
       2,
       "'lots' is not a byte count"},
      {{"tiling", "--family", "sdxl", "--size", "16"}, 1, "no family 'sdxl'"},
      {{"calibrate", "--op", "vae_decode"}, 2, "--family is required"},
      {{"calibrate", "--family", "zimage", "--op", "unet"},
       2,
       "--op unet: give vae_decode, vae_encode, text_encode or denoise"},
      {{"calibrate", "--family", "zimage", "--op", "vae_decode", "--tokens",
        "16"},
       2,
       "--tokens is for text_encode and denoise"},
      {{"calibrate", "--family", "zimage", "--op", "denoise", "--tokens",
        "16,0"},
       2,
       "--tokens '16,0': give whole numbers from 1 to 500"},
      {{"calibrate", "--family", "zimage", "--op", "denoise", "--sizes",
        "64,70"},
       2,
       "--sizes '64,70': give multiples of 16 from 16 to 2048"},
      {{"calibrate", "--family", "zimage", "--op", "text_encode", "--arch",
        "big"},
       2,
       "--arch big: give default or tiny"},
      {{"calibrate", "--family", "zimage", "--op", "vae_decode", "--headroom",
        "3"},
       2,
       "--headroom 3 must be between 1.0 and 2.0"},
      {{"calibrate", "--family", "zimage", "--op", "vae_decode", "--sizes",
        "12,abc"},
       2,
       "--sizes '12,abc': give multiples of 8 from 8 to 16384"},
      {{"calibrate", "--family", "zimage", "--op", "vae_decode", "--write",
        dir.path() + "/none.toml"},
       2,
       "none.toml: no such calibration file"},
  };
  for (const auto& c : cases) {
    const auto r = run_molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.out.empty());
    const std::string& command = c.args.front();
    // The command, then the message; a usage error ends with the help hint.
    CHECK_THAT(r.err, Catch::StartsWith("molddiag " + command + ": "));
    CHECK_THAT(r.err, Catch::Contains(c.message));
    const std::string hint =
        "Run 'molddiag " + command + " --help' for its options.\n";
    if (c.exit_code == 2)
      CHECK_THAT(r.err, Catch::EndsWith(hint));
    else
      CHECK_THAT(r.err, !Catch::Contains(hint));
  }
}

TEST_CASE("molddiag tiling reports every run", "[cli][vae]") {
  const auto r = run_molddiag({"tiling", "--family", "zimage", "--arch", "tiny",
                               "--size", "64", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["family"] == "zimage");
  CHECK(j["arch"] == "tiny");
  CHECK_FALSE(j.contains("config"));  // the key is "arch", as the flag
  CHECK(j["size"] == 64);
  CHECK(j["tile"] == 4);     // the default: half the 8-latent edge
  CHECK(j["overlap"] == 1);  // the default: a quarter of the tile
  CHECK(j["tiles"].get<int>() > 1);
  const auto& runs = j["runs"];
  REQUIRE(runs.size() == 4);
  const char* names[] = {"whole", "bounded", "tiled_linear",
                         "tiled_smootherstep"};
  const double whole_peak = runs[0]["peak_bytes"].get<double>();
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& run = runs[i];
    INFO(run.dump());
    CHECK(run["name"] == names[i]);
    CHECK(run["peak_bytes"].get<double>() > 0);
    CHECK(run["seconds"].get<double>() > 0);
    CHECK(run["quadrants"].size() == 4);
    CHECK(run["seams"].contains("relative_l2"));
    CHECK(run["seams"].contains("max_abs"));
    const double rel = run["relative_l2"].get<double>();
    switch (i) {
    case 0:  // the reference itself
      CHECK(rel == 0.0);
      CHECK(run["max_abs"] == 0.0);
      CHECK(run["peak_ratio_whole_over_this"] == 1.0);
      CHECK(run["time_ratio_this_over_whole"] == 1.0);
      break;
    case 1:  // the same decode, convolutions in bands
      CHECK(rel <= 1e-5);
      break;
    default:  // tiles: less memory, and seams that differ from the whole
      CHECK(run["peak_bytes"].get<double>() < whole_peak);
      CHECK(run["peak_ratio_whole_over_this"].get<double>() > 1.0);
      CHECK(rel > 0.0);
      CHECK(run["seams"]["relative_l2"].get<double>() > 0.0);
      break;
    }
  }
}

TEST_CASE("molddiag calibrate reports the allocator's peak and the RSS peak",
          "[cli][vae][calibrate]") {
  const auto r =
      run_molddiag({"calibrate", "--family", "zimage", "--op", "vae_decode",
                    "--arch", "tiny", "--sizes", "32,64", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["points"].size() == 2);
  for (const auto& point : j["points"]) {
    CHECK(point["peak_bytes"].get<double>() > 0);
    CHECK(point.contains("rss_peak_bytes"));
  }
  // The process grows for the first point at least (libtorch's first
  // kernels, oneDNN's scratch): /proc can tell it on Linux.
  CHECK(j["points"][0]["rss_peak_bytes"].get<double>() > 0);
}
