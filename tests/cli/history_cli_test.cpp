// molddiag history and calibrate --from-history on the measured history that
// real tiny mold runs recorded, and the history's hostile cases through the
// real binaries: a FIFO in its folder, a corrupt file.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::run_mold;
using mold::test::run_molddiag;
using mold::test::TempDir;
using Json = nlohmann::json;

namespace {

/// Tiny runs of distinct sizes (the first `count` of 64, 96, 128 px)
/// recorded into the environment's state folder.
void record_runs(const std::map<std::string, std::string>& env, int count = 3) {
  for (const char* size : {"64", "96", "128"}) {
    if (count-- == 0) break;
    TempDir out;
    const auto r = run_mold(
        {"run", "z-image-turbo", "a red fox", "--tiny", "--width", size,
         "--height", size, "--steps", "1", "--output", out.path()},
        env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
}

}  // namespace

TEST_CASE(
    "molddiag history lists what the runs recorded, prunes it, and "
    "calibrate --from-history fits a table from it",
    "[molddiag][history]") {
  TempDir home;
  const std::map<std::string, std::string> env = {
      {"XDG_STATE_HOME", home.path() + "/state"}};
  record_runs(env);
  const fs::path dir = fs::path(home.path()) / "state" / "mold" / "history";
  REQUIRE(fs::is_directory(dir));
  // A FIFO and garbage beside the device's file: listed around, never hung on.
  REQUIRE(::mkfifo((dir / "stuck.jsonl").c_str(), 0600) == 0);
  std::ofstream(dir / "garbage.jsonl") << "not a history\n";

  const auto listed = run_molddiag({"history", "--json"}, env);
  INFO(listed.out << listed.err);
  REQUIRE(listed.exit_code == 0);
  const Json j = Json::parse(listed.out);
  REQUIRE(j["devices"].size() == 1);
  const Json& device = j["devices"][0];
  CHECK(device["backend"] == "cpu");
  CHECK(device["skipped_lines"] == 0);
  CHECK(device["phases"] == 9);  // text_encode, denoise, vae_decode x 3
  bool denoise = false;
  for (const auto& op : device["ops"])
    if (op["op"] == "zimage z-image-turbo denoise (tiny)") {
      denoise = true;
      CHECK(op["runs"] == 3);
      CHECK(op["shapes"] == 3);
      CHECK(op["largest_peak_bytes"].get<long>() > 0);
    }
  CHECK(denoise);
  const std::string file = device["file"];

  // The constants of the tiny denoise from its three runs, written into a
  // copy of the shipped calibration file.
  const fs::path table = fs::path(home.path()) / "zimage.calibration.toml";
  fs::copy_file(fs::path(mold::test::kPluginDir) / "zimage.calibration.toml",
                table);
  const auto fitted = run_molddiag(
      {"calibrate", "--family", "zimage", "--op", "denoise", "--arch", "tiny",
       "--from-history", file, "--write", table.string()},
      env);
  INFO(fitted.out << fitted.err);
  REQUIRE(fitted.exit_code == 0);
  CHECK_THAT(fitted.out, Catch::Contains("3 runs of 3 shapes") &&
                             Catch::Contains("[denoise.cpu]") &&
                             Catch::Contains("attention_factor = "));
  std::ifstream in(table);
  const std::string written((std::istreambuf_iterator<char>(in)), {});
  CHECK_THAT(written, Catch::Contains("# learned by: molddiag calibrate "
                                      "--family zimage --op denoise") &&
                          Catch::Contains("[vae_decode.cuda]"));  // kept
  // Runs that are not there are named.
  const auto none =
      run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--arch", "default", "--from-history", file},
                   env);
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.err, Catch::Contains("no run of zimage denoise at --arch "
                                       "default"));
  // --sizes belongs to a run made now.
  const auto mixed =
      run_molddiag({"calibrate", "--family", "zimage", "--op", "denoise",
                    "--from-history", file, "--sizes", "64"},
                   env);
  CHECK(mixed.exit_code == 2);
  CHECK_THAT(mixed.err, Catch::Contains("--sizes and --from-history"));

  // Pruning: the filters need --prune; --op drops that op's phases only.
  CHECK(run_molddiag({"history", "--op", "denoise"}, env).exit_code == 2);
  const auto pruned =
      run_molddiag({"history", "--prune", "--op", "denoise"}, env);
  INFO(pruned.out << pruned.err);
  REQUIRE(pruned.exit_code == 0);
  CHECK_THAT(pruned.out, Catch::Contains("dropped 3 phases"));
  const Json after = Json::parse(run_molddiag({"history", "--json"}, env).out);
  CHECK(after["devices"][0]["phases"] == 6);
  // A device that has no history is named.
  const auto unknown =
      run_molddiag({"history", "--device", "Nonexistent GPU"}, env);
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("'Nonexistent GPU'"));
}

TEST_CASE("mold run with its history file replaced by a FIFO warns and runs",
          "[mold][history]") {
  TempDir home;
  const std::map<std::string, std::string> env = {
      {"XDG_STATE_HOME", home.path() + "/state"}};
  record_runs(env, 1);
  const fs::path dir = fs::path(home.path()) / "state" / "mold" / "history";
  fs::path file;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".jsonl") file = entry.path();
  REQUIRE(!file.empty());
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  TempDir out;
  const auto r =
      run_mold({"run", "z-image-turbo", "a red fox", "--tiny", "--width", "64",
                "--height", "64", "--steps", "1", "--output", out.path()},
               env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("the memory history is not read") &&
                        Catch::Contains("a FIFO"));
  CHECK(fs::is_fifo(file));
}
