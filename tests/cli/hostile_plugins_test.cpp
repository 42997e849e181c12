// Hostile plugins (tests/plugins/hostile/) against the real molddiag: each
// misbehaves while it loads, and the scanner must turn that into a load error
// of its own kind while every other plugin and the command go on.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

namespace {

std::string hostile_dir(const std::string& name) {
  return std::string(mold::test::kHostilePluginRoot) + "/" + name;
}

struct Case {
  const char* dir;
  const char* kind;
  const char* message;
};

const Case kCases[] = {
    {"abort_in_constructor", "crashed", "crashed with signal 6"},
    {"segfault_in_entry", "crashed", "crashed with signal 11"},
    {"exit0_in_register", "exited", "exit code 0"},
    {"quick_exit_in_constructor", "exited", "exit code 3"},
    {"prints_in_constructor", "wrote_output", "hello from a plugin\\n"},
    // The escape sequence is shown escaped, never replayed to the terminal.
    {"stderr_in_register", "wrote_output", "\\x1b[31mwarning"},
};

/// A home of its own per test, so that each starts with an empty scan cache.
struct Run {
  TempDir home;
  mold::test::ProcessResult operator()(const std::vector<std::string>& args) {
    return run_process(kMolddiag, args, mold::test::isolated_env(home));
  }
};

bool lists_real_plugins(const nlohmann::json& j) {
  int found = 0;
  for (const auto& p : j["plugins"])
    for (const char* name :
         {"qwen_image", "zimage", "backend_cuda", "backend_metal"})
      if (p["name"] == name) ++found;
  return found == 4;
}

}  // namespace

TEST_CASE(
    "a plugin that crashes, exits or writes while loading is skipped "
    "with its own kind",
    "[cli][scan]") {
  for (const auto& c : kCases) {
    INFO(c.dir);
    Run molddiag;
    const auto r =
        molddiag({"plugins", "--json", "--plugin-dir", hostile_dir(c.dir)});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    const auto j = nlohmann::json::parse(r.out);  // stdout is only the JSON
    REQUIRE(j["errors"].size() == 1);
    CHECK(j["errors"][0]["kind"] == c.kind);
    CHECK_THAT(j["errors"][0]["message"].get<std::string>(),
               Catch::Contains(c.message) && Catch::Contains("was not loaded"));
    CHECK(lists_real_plugins(j));

    // Other commands go on, with a one-line warning.
    const auto e =
        molddiag({"estimate", "--plugin-dir", hostile_dir(c.dir), "--family",
                  "qwen_image", "--op", "vae_decode", "--backend", "cuda",
                  "--width", "1248", "--height", "832", "--json"});
    CHECK(e.exit_code == 0);
    CHECK(nlohmann::json::parse(e.out)["bytes"] == 6022348800ull);
    CHECK_THAT(e.err, Catch::Contains("1 plugin load error(s)"));

    // The verdict is remembered: no second child, the same kind.
    const auto again =
        molddiag({"plugins", "--json", "--plugin-dir", hostile_dir(c.dir)});
    const auto k = nlohmann::json::parse(again.out);
    REQUIRE(k["errors"].size() == 1);
    CHECK(k["errors"][0]["kind"] == c.kind);
    CHECK_THAT(k["errors"][0]["message"].get<std::string>(),
               Catch::Contains("remembered in"));
  }
}

TEST_CASE("a plugin that hangs while loading times out and the command goes on",
          "[cli][scan]") {
  Run molddiag;
  const std::string config =
      molddiag.home.write("config.toml", "[plugins]\nscan_timeout = 1\n");
  const auto start = std::chrono::steady_clock::now();
  const auto r = molddiag({"plugins", "--json", "--config", config,
                           "--plugin-dir", hostile_dir("hang_in_register")});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(seconds < 20);  // the plugin sleeps 60 s
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["errors"].size() == 1);
  CHECK(j["errors"][0]["kind"] == "timed_out");
  CHECK_THAT(j["errors"][0]["message"].get<std::string>(),
             Catch::Contains("did not finish within 1 s"));
  CHECK(lists_real_plugins(j));
}

TEST_CASE("a corrupt scan cache is rebuilt, never fatal", "[cli][scan]") {
  Run molddiag;
  std::filesystem::create_directories(molddiag.home.path() + "/cache/mold");
  for (const char* garbage :
       {"{not json", "[]", "{\"version\": 99}", "\xff\xfe\x00garbage",
        "{\"version\": 1, \"core_build_id\": 7, \"plugins\": []}"}) {
    INFO(garbage);
    {
      std::ofstream out(molddiag.home.path() + "/cache/mold/plugins.json",
                        std::ios::binary | std::ios::trunc);
      out << garbage;
    }
    const auto r = molddiag({"plugins", "--json", "--plugin-dir",
                             hostile_dir("abort_in_constructor")});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["errors"].size() == 1);
    CHECK(j["errors"][0]["kind"] == "crashed");
    CHECK(lists_real_plugins(j));
    // Rewritten as a valid cache.
    std::ifstream in(molddiag.home.path() + "/cache/mold/plugins.json");
    const auto cache = nlohmann::json::parse(in, nullptr, false);
    CHECK(cache.is_object());
    CHECK(cache["version"] == 1);
  }
}

TEST_CASE("a directory of foreign libraries is refused before their code runs",
          "[cli][scan]") {
  // Every library of the C runtime's directory: none is a mold plugin. The ELF
  // symbol table says so before any of them is loaded, so no foreign static
  // constructor (gflags' flag registration, for one) can run or print.
  Run molddiag;
  const std::string dir =
      std::filesystem::path(kMolddiag).parent_path().parent_path().string() +
      "/lib";  // libmold_core and libmold_torch
  const auto r = molddiag({"plugins", "--json", "--plugin-dir", dir});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["errors"].size() >= 2);
  for (const auto& e : j["errors"]) {
    INFO(e["path"]);
    CHECK(e["kind"] == "missing_entry_symbol");
    CHECK_THAT(e["message"].get<std::string>(),
               Catch::Contains("it was not loaded"));
  }
}

TEST_CASE("plugins load directly with --no-scan or plugins.scan = false",
          "[cli][scan]") {
  Run molddiag;
  const auto r = molddiag({"plugins", "--json", "--no-scan"});
  REQUIRE(r.exit_code == 0);
  CHECK(lists_real_plugins(nlohmann::json::parse(r.out)));
  CHECK_FALSE(std::filesystem::exists(molddiag.home.path() +
                                      "/cache/mold/plugins.json"));
  const std::string config =
      molddiag.home.write("config.toml", "[plugins]\nscan = false\n");
  const auto c = molddiag({"plugins", "--json", "--config", config});
  REQUIRE(c.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(molddiag.home.path() +
                                      "/cache/mold/plugins.json"));
  // Refused values name the key and the range.
  const std::string bad =
      molddiag.home.write("bad.toml", "[plugins]\nscan_timeout = 0\n");
  const auto b = molddiag({"plugins", "--config", bad});
  CHECK(b.exit_code == 1);
  CHECK_THAT(b.err, Catch::Contains("plugins.scan_timeout") &&
                        Catch::Contains("0.1 to 600"));
  const std::string word =
      molddiag.home.write("word.toml", "[plugins]\nscan = \"yes\"\n");
  const auto w = molddiag({"plugins", "--config", word});
  CHECK(w.exit_code == 1);
  CHECK_THAT(w.err, Catch::Contains("plugins.scan") &&
                        Catch::Contains("true or false"));
}
