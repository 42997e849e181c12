// molddiag calibrate for the text encoder's and denoiser's ops: the tiny
// Z-Image pipeline run at each size and prompt length, the constants fitted
// to cover every point, and --write replacing only its own table.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"

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
  const auto r =
      run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--sizes", "64,128", "--tokens", "8,64", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["arch"] == "tiny");  // the default for these ops
  CHECK(j["op"] == "denoise");
  const auto& points = j["points"];
  REQUIRE(points.size() == 4);
  // Each word of the prompt is one token; the chat template adds the same
  // tokens to each.
  CHECK(points[1]["tokens"].get<int>() - points[0]["tokens"].get<int>() == 56);
  CHECK(points[0]["tokens"].get<int>() > 8);
  double worst = 10;
  for (const auto& p : points) {
    INFO(p.dump());
    const double peak = p["peak_bytes"].get<double>();
    REQUIRE(peak > 0);
    const double ratio = p["fitted_bytes"].get<double>() / peak;
    CHECK(ratio >= 1.05 - 1e-6);  // the fit covers it, then the headroom
    worst = std::min(worst, ratio);
  }
  CHECK(worst == Approx(1.05).epsilon(1e-4));  // scaled to touch one point
  CHECK(j["constants"]["bytes_per_token"].get<double>() > 0);
  CHECK(j["constants"].contains("bytes_per_score"));
  CHECK(j["constants"].contains("fixed_bytes"));
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
                        Catch::Contains("bytes_per_token = ") &&
                        Catch::Contains("arch = \"tiny\""));
}

TEST_CASE("molddiag calibrate wants more points than constants",
          "[cli][calibrate]") {
  const auto r = run_molddiag({"calibrate", "--family", "zimage", "--op",
                               "text_encode", "--tokens", "8,200"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--sizes 64 and --tokens 8,200 make 2 "
                                    "points: fitting the 3 constants wants "
                                    "at least 4"));
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
                        Catch::Contains("arch = \"tiny\""));
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
  bool token_term = false;
  for (const auto& t : j["terms"])
    if (t["constant"] == "bytes_per_token") token_term = t["basis"] > 0;
  CHECK(token_term);
}
