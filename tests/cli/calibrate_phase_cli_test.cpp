// molddiag calibrate for the text encoder's and denoiser's ops: the tiny
// Z-Image pipeline (or a model directory) run at each size, prompt length
// and dtype, the stage factors fitted to cover every point, points of an
// earlier run joining the fit, and --write replacing only its own table.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"
#include "support/zimage_model_dir.hpp"

using mold::test::run_molddiag;
using mold::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The text of table `header` up to the next table.
std::string table_text(const std::string& file, const std::string& header) {
  const auto begin = file.find(header);
  if (begin == std::string::npos) return "";
  const auto end = file.find("\n[", begin + 1);
  return file.substr(begin, end == std::string::npos ? end : end - begin);
}

}  // namespace

TEST_CASE("molddiag calibrate --op denoise fits constants covering every point",
          "[cli][calibrate]") {
  const auto r = run_molddiag(
      {"calibrate", "--family", "zimage", "--op", "denoise", "--sizes",
       "64,128", "--tokens", "8,64", "--dtype", "float32,bfloat16", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["arch"] == "tiny");  // the default for these ops
  CHECK(j["op"] == "denoise");
  const auto& points = j["points"];
  REQUIRE(points.size() == 8);  // each dtype
  CHECK(points[0]["dtype"] == "float32");
  CHECK(points[4]["dtype"] == "bfloat16");
  CHECK(points[0]["weights"] == "tiny");
  // Each word of the prompt is one token; the chat template adds the same
  // tokens to each.
  CHECK(points[1]["tokens"].get<int>() - points[0]["tokens"].get<int>() == 56);
  CHECK(points[0]["tokens"].get<int>() > 8);
  double worst = 10;
  for (const auto& p : points) {
    INFO(p.dump());
    // The headroom covers the fitted part: the threads' scratch (every
    // thread's, counted where a stage peaks at its products) comes on top.
    const double unfitted =
        p["thread_bytes"].get<double>() + p["weight_bytes"].get<double>();
    const double peak = p["peak_bytes"].get<double>() - unfitted;
    REQUIRE(peak > 0);
    const double ratio = (p["fitted_bytes"].get<double>() - unfitted) / peak;
    CHECK(ratio >= 1.05 - 1e-6);  // the fit covers it, then the headroom
    worst = std::min(worst, ratio);
  }
  CHECK(worst == Approx(1.05).epsilon(1e-4));  // scaled to touch one point
  // The Z-Image plugin counts three stages; each has a factor near 1 (the
  // counts follow the code), and the fit's fixed bytes.
  for (const char* stage :
       {"rotary_factor", "attention_factor", "feed_forward_factor"}) {
    INFO(stage);
    CHECK(j["constants"][stage].get<double>() > 0.8);
    CHECK(j["constants"][stage].get<double>() < 1.3);
  }
  CHECK(j["constants"].contains("fixed_bytes"));
  CHECK(points[0]["bases"].contains("attention_factor"));
}

TEST_CASE("molddiag calibrate --points-from joins an earlier run's points",
          "[cli][calibrate]") {
  TempDir dir;
  auto r = run_molddiag({"calibrate", "--family", "zimage", "--op",
                         "text_encode", "--tokens", "8,100", "--sizes", "64",
                         "--dtype", "float32,bfloat16", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string earlier = dir.write("earlier.json", r.out);
  r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                    "--tokens", "8,60,120,300", "--points-from", earlier});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Its 4 points are listed (and fitted) after the run's 4, by file name.
  CHECK_THAT(r.out, Catch::Contains("#   earlier.json: tiny bfloat16 64x64 "
                                    "px") &&
                        Catch::Contains("--points-from earlier.json") &&
                        Catch::Contains("projection_factor = "));

  SECTION("points of another op, or of other terms, are refused by name") {
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                      "--sizes", "64,96", "--tokens", "8,40", "--points-from",
                      earlier});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(earlier) &&
                          Catch::Contains("are of zimage text_encode, not "
                                          "zimage denoise"));
    auto edited = nlohmann::json::parse(read_text(earlier));
    edited["points"][0]["bases"].erase("attention_factor");
    const std::string stale = dir.write("stale.json", edited.dump());
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--tokens", "8,60,120,300", "--points-from", stale});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("point 1 was measured with the terms") &&
                          Catch::Contains("measure it again"));
    auto threads = nlohmann::json::parse(read_text(earlier));
    threads["points"][0]["threads"] = 0;
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--tokens", "8,60,120,300", "--points-from",
                      dir.write("threads.json", threads.dump())});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("point 1 has threads 0: it must be "
                                      "from 1 to 4096"));
    threads["points"][0]["threads"] = 2;
    threads["points"][0]["thread_bytes"] =
        threads["points"][0]["peak_bytes"].get<long>() + 1;
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--tokens", "8,60,120,300", "--points-from",
                      dir.write("scratch.json", threads.dump())});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("point 1 has thread_bytes") &&
                          Catch::Contains("above its peak_bytes"));
    threads["points"][0]["thread_bytes"] = 0;
    threads["points"][0]["weight_bytes"] =
        threads["points"][0]["peak_bytes"].get<long>() + 1;
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--tokens", "8,60,120,300", "--points-from",
                      dir.write("weights.json", threads.dump())});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("point 1 has weight_bytes") &&
                          Catch::Contains("above its peak_bytes"));
    const std::string junk = dir.write("junk.json", "{\"points\": 3");
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--tokens", "8,60,120,300", "--points-from", junk});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("not JSON"));
    r = run_molddiag({"calibrate", "--family", "zimage", "--op", "text_encode",
                      "--points-from", dir.path() + "/none.json"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("none.json: no such file"));
  }
}

TEST_CASE("molddiag calibrate --model-dir measures a model directory",
          "[cli][calibrate][model_dir]") {
  const mold::ModelFamily* family = mold::test::real_plugins().family("zimage");
  REQUIRE(family);
  TempDir models;
  const fs::path dir = mold::test::make_zimage_model_dir(
      *family, models.path(),
      fs::path(mold::test::kPluginDir) / "zimage.tokenizer.json");
  auto r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                         "--model-dir", dir.string(), "--sizes", "64,96",
                         "--tokens", "8,40", "--steps", "1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Recorded by the directory's name only: the table goes into a repository.
  CHECK_THAT(r.out, Catch::Contains("--model-dir .../z-image-turbo --sizes "
                                    "64,96 --tokens 8,40 --dtype float32 "
                                    "--steps 1") &&
                        Catch::Contains("#   z-image-turbo float32 64x64 px") &&
                        !Catch::Contains(models.path()));

  r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--model-dir", dir.string(), "--arch", "tiny"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("drop --arch tiny"));
  r = run_molddiag({"calibrate", "--family", "zimage", "--op", "vae_decode",
                    "--model-dir", dir.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--model-dir is for the per-token ops"));
  r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--model-dir", (dir / "nowhere").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("nowhere: no such directory"));
  r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--dtype", "float64"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--dtype 'float64': give float32, "
                                    "float16 or bfloat16"));
  // An empty list is not the default list.
  r = run_molddiag(
      {"calibrate", "--family", "zimage", "--op", "denoise", "--sizes", ""});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--sizes is empty"));
}

TEST_CASE("molddiag calibrate --op text_encode measures prompt lengths",
          "[cli][calibrate]") {
  const auto r = run_molddiag({"calibrate", "--family", "zimage", "--op",
                               "text_encode", "--tokens", "8,60,120,300"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("64x64 px, ") &&
                        Catch::Contains("estimate now") &&
                        Catch::Contains("[text_encode.cpu]") &&
                        Catch::Contains("projection_factor = ") &&
                        Catch::Contains("attention_factor = ") &&
                        Catch::Contains("feed_forward_factor = ") &&
                        !Catch::Contains("arch = "));
}

TEST_CASE("molddiag calibrate wants more points than constants",
          "[cli][calibrate]") {
  const auto r = run_molddiag({"calibrate", "--family", "zimage", "--op",
                               "text_encode", "--tokens", "8,200"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--sizes 64 and --tokens 8,200 make 2 "
                                    "points: a fit wants at least 4"));
}

TEST_CASE(
    "molddiag calibrate --write replaces the op's table only, and the "
    "file is an override the estimators take",
    "[cli][calibrate]") {
  TempDir home;
  const fs::path shipped =
      fs::path(mold::test::kPluginDir) / "zimage.calibration.toml";
  const std::string before = read_text(shipped);
  REQUIRE(!table_text(before, "[denoise.cpu]").empty());
  const fs::path dir = fs::path(home.path()) / "config/mold/calibration";
  fs::create_directories(dir);
  const fs::path copy = dir / "zimage.calibration.toml";
  fs::copy_file(shipped, copy);

  auto r = run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                         "--sizes", "64,96", "--tokens", "8,40", "--write",
                         copy.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("written to"));
  const std::string after = read_text(copy);
  const std::string table = table_text(after, "[denoise.cpu]");
  CHECK_THAT(table, Catch::Contains("--sizes 64,96 --tokens 8,40") &&
                        Catch::Contains("calibrated = true") &&
                        Catch::Contains("rotary_factor = "));
  // Everything before the table, and the text encoder's, as they were.
  CHECK(after.substr(0, after.find("[denoise.cpu]")) ==
        before.substr(0, before.find("[denoise.cpu]")));
  CHECK(table_text(after, "[text_encode.cpu]") ==
        table_text(before, "[text_encode.cpu]"));

  // The written file, as the user's override, is what the estimator uses.
  auto env = mold::test::isolated_env(home);
  r = mold::test::run_process(
      mold::test::kMolddiag,
      {"estimate", "--family", "zimage", "--op", "denoise", "--backend", "cpu",
       "--width", "128", "--height", "128", "--tokens", "40", "--arch", "tiny",
       "--dtype", "float32", "--json"},
      env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["calibrated"] == true);
  CHECK_THAT(j["source"].get<std::string>(),
             Catch::Contains("keys set by") &&
                 Catch::Contains("--sizes 64,96 --tokens 8,40"));
  bool attention_term = false;
  for (const auto& t : j["terms"])
    if (t["constant"] == "attention_factor") attention_term = t["basis"] > 0;
  CHECK(attention_term);
}

TEST_CASE(
    "molddiag calibrate --arch tiny --write fills the tiny VAE's own table, "
    "with an attention term from --attention-from",
    "[cli][calibrate]") {
  TempDir home;
  const fs::path shipped =
      fs::path(mold::test::kPluginDir) / "qwen_image.calibration.toml";
  const std::string before = read_text(shipped);
  const fs::path dir = fs::path(home.path()) / "config/mold/calibration";
  fs::create_directories(dir);
  const fs::path copy = dir / "qwen_image.calibration.toml";
  fs::copy_file(shipped, copy);

  auto r =
      run_molddiag({"calibrate", "--family", "qwen_image", "--op", "vae_decode",
                    "--arch", "tiny", "--sizes", "64,128,320,384",
                    "--attention-from", "320", "--write", copy.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string after = read_text(copy);
  const std::string table = table_text(after, "[vae_decode.cpu.tiny]");
  CHECK_THAT(table, Catch::Contains("--arch tiny --sizes 64,128,320,384") &&
                        Catch::Contains("--attention-from 320") &&
                        Catch::Contains("attention_fixed_bytes = ") &&
                        Catch::Contains("bytes_per_latent_score = ") &&
                        Catch::Contains("points = [[4096, "));
  // The published VAE's table is the one it was.
  CHECK(table_text(after, "[vae_decode.cpu]") ==
        table_text(before, "[vae_decode.cpu]"));

  // The estimator takes the tiny table for the tiny architecture only.
  auto env = mold::test::isolated_env(home);
  auto estimate = [&](const std::string& arch, const std::string& size) {
    const auto e = mold::test::run_process(
        mold::test::kMolddiag,
        {"estimate", "--family", "qwen_image", "--op", "vae_decode",
         "--backend", "cpu", "--width", size, "--height", size, "--arch", arch,
         "--dtype", "float32", "--json"},
        env);
    INFO(e.err);
    REQUIRE(e.exit_code == 0);
    return nlohmann::json::parse(e.out);
  };
  const auto tiny = estimate("tiny", "512");
  CHECK_THAT(tiny["source"].get<std::string>(),
             Catch::Contains("[vae_decode.cpu.tiny]") &&
                 Catch::Contains("--attention-from 320"));
  CHECK(tiny["terms"][0]["name"] == "attention scores");
  const auto published = estimate("default", "512");
  CHECK_THAT(published["source"].get<std::string>(),
             Catch::Contains("[vae_decode.cpu]"));

  // What --attention-from needs.
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--sizes", "64,320", "--attention-from", "320"},
       "give at least two sizes from 320 on"},
      {{"--sizes", "320,384", "--attention-from", "320"}, "and one below"},
      {{"--sizes", "64,320,384", "--attention-from", "320", "--dtype",
        "float32,bfloat16"},
       "--attention-from takes one --dtype"},
      {{"--attention-from", "4"}, "give a size from 8 to 16384"},
  };
  for (const auto& [extra, message] : bad) {
    std::vector<std::string> args = {"calibrate", "--family",   "qwen_image",
                                     "--op",      "vae_decode", "--arch",
                                     "tiny"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto e = run_molddiag(args);
    INFO(e.err);
    CHECK(e.exit_code == 2);
    CHECK_THAT(e.err, Catch::Contains(message));
  }
  r = run_molddiag({"calibrate", "--family", "qwen_image", "--op", "vae_decode",
                    "--sizes", "64,64,64,64,64,64,64"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("64 is given twice"));
  r = run_molddiag({"calibrate", "--family", "qwen_image", "--op",
                    "text_encode", "--attention-from", "320"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--attention-from is for the VAE ops"));
}

TEST_CASE(
    "molddiag calibrate refuses bfloat16 where the cpu kernel's scratch is "
    "only bounded, and says what to do",
    "[cli][calibrate]") {
  // ONEDNN_MAX_CPU_ISA=AVX2: libtorch's own bfloat16 kernels on any CPU.
  const auto r =
      run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--sizes", "64", "--dtype", "float32,bfloat16"},
                   {{"ONEDNN_MAX_CPU_ISA", "AVX2"}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("molddiag calibrate: --dtype bfloat16"));
  CHECK_THAT(r.err, Catch::Contains("libtorch's own kernels"));
  CHECK_THAT(r.err, Catch::Contains("calibrate float32 here"));
  CHECK(r.out.empty());
}
