#include <catch2/catch.hpp>
#include <cstdlib>
#include <mold/base/error.hpp>
#include <mold/config/config.hpp>

#include "support/process.hpp"
#include "support/scoped_env.hpp"

using namespace mold;
using mold::test::ScopedEnv;
using mold::test::TempDir;

TEST_CASE("a valid config is read, relative plugin dirs from the file's dir",
          "[config]") {
  TempDir dir;
  const auto path = dir.write("mold.toml", R"(
[plugins]
dirs = ["plugins", "/opt/mold/plugins"]
[backends.cpu]
memory_limit = "8 GiB"
[cache]
policy = "greedy_dual_size"
working_memory_floor = "3 GiB"
[calibration]
dir = "cal"
)");
  const Config config = Config::load_file(path);
  REQUIRE(config.plugin_dirs.size() == 2);
  CHECK(config.plugin_dirs[0] == std::filesystem::path(dir.path()) / "plugins");
  CHECK(config.plugin_dirs[1] == "/opt/mold/plugins");
  CHECK(config.cpu_memory_limit == 8 * kGiB);
  CHECK(config.calibration_dir == std::filesystem::path(dir.path()) / "cal");
  CHECK(config.source == path);
  CHECK(config.cache.policy == EvictionPolicy::greedy_dual_size);
  CHECK(config.cache.working_memory_floor == 3 * kGiB);
}

TEST_CASE("malformed configs name the file, the line and the key", "[config]") {
  TempDir dir;
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[plugins]\ndirs = [\"a\"\n", ":2"},  // unterminated array: syntax error
      {"[plugins]\ndirz = []\n",
       ":2: key 'plugins.dirz': unknown key; known here: dirs"},
      {"[backends.cpu]\nmemory_limit = 8\n",
       ":2: key 'backends.cpu.memory_limit': must be a quoted byte count"},
      {"[backends.cpu]\nmemory_limit = \"eight gigs\"\n",
       "backends.cpu.memory_limit"},
      {"[backends.gpu]\n", "key 'backends.gpu': unknown key; known here: cpu"},
      {"plugins = 3\n", ":1: key 'plugins': must be a table"},
      {"[plugins]\ndirs = [1]\n",
       "key 'plugins.dirs': every entry must be a string path"},
      {"[server]\nport = 1\n", "key 'server': unknown key"},
      {"[cache]\npolicy = \"fifo\"\n",
       ":2: key 'cache.policy': unknown eviction policy 'fifo'"},
      {"[cache]\nworking_memory_floor = 3\n",
       "key 'cache.working_memory_floor'"},
      {"[cache]\nfloor = \"3 GiB\"\n",
       "known here: policy, working_memory_floor"},
  };
  for (const auto& c : cases) {
    const auto path = dir.write("bad.toml", c.text);
    INFO(c.text);
    try {
      Config::load_file(path);
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains(path) && Catch::Contains(c.expected));
    }
  }
}

TEST_CASE("config search order: --config, MOLD_CONFIG, XDG default",
          "[config]") {
  TempDir dir;
  ScopedEnv xdg("XDG_CONFIG_HOME", dir.path() + "/xdg");
  ScopedEnv no_env("MOLD_CONFIG", "");
  unsetenv("MOLD_CONFIG");

  // Nothing anywhere: defaults, no source.
  CHECK(Config::load(std::nullopt).source.empty());
  CHECK(Config::load(std::nullopt).calibration_dir ==
        std::filesystem::path(dir.path()) / "xdg/mold/calibration");

  const auto xdg_file = dir.write("xdg/mold/config.toml",
                                  "[backends.cpu]\nmemory_limit = \"1 GiB\"\n");
  CHECK(Config::load(std::nullopt).source == xdg_file);

  const auto env_file =
      dir.write("env.toml", "[backends.cpu]\nmemory_limit = \"2 GiB\"\n");
  {
    ScopedEnv env("MOLD_CONFIG", env_file);
    CHECK(Config::load(std::nullopt).cpu_memory_limit == 2 * kGiB);
    const auto flag_file = dir.write("flag.toml", "");
    CHECK(Config::load(std::filesystem::path(flag_file)).source == flag_file);
  }
  CHECK_THROWS_WITH(
      Config::load(std::filesystem::path(dir.path() + "/missing.toml")),
      Catch::Contains("missing.toml") && Catch::Contains("--config"));
  ScopedEnv missing_env("MOLD_CONFIG", dir.path() + "/nope.toml");
  CHECK_THROWS_WITH(
      Config::load(std::nullopt),
      Catch::Contains("nope.toml") && Catch::Contains("MOLD_CONFIG"));
}
