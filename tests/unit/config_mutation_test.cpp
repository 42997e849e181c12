// Thousands of mutated configuration files (MOLD_MUTATION_CASES for more):
// each loads, or fails with a ConfigError naming the file; nothing crashes and
// no other exception escapes.
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/config/config.hpp>
#include <random>

#include "support/mutations.hpp"
#include "support/process.hpp"

TEST_CASE("mutated config files load or fail with a ConfigError",
          "[config][mutation]") {
  mold::test::TempDir dir;
  const std::string seed =
      "[plugins]\n"
      "dirs = [\"plugins\", \"~/more\"]\n"
      "scan = true\n"
      "scan_timeout = 10\n"
      "[backends.cpu]\n"
      "memory_limit = \"8 GiB\"\n"
      "[cache]\n"
      "policy = \"lru\"\n"
      "working_memory_floor = \"3 GiB\"\n"
      "[calibration]\n"
      "dir = \"calibration\"\n";
  const std::string path = dir.path() + "/config.toml";
  const int cases = mold::test::mutation_cases(3000);
  std::mt19937_64 random(7);
  int loaded = 0, refused = 0;
  for (int i = 0; i < cases; ++i) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << mold::test::mutate(seed, random);
    }
    INFO("case " << i);
    try {
      const mold::Config config = mold::Config::load_file(path);
      if (config.cpu_memory_limit)
        CHECK(*config.cpu_memory_limit >= 1024 * 1024);
      CHECK(config.plugin_scan_timeout >= 0.1);
      ++loaded;
    } catch (const mold::ConfigError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("config.toml"));
      ++refused;
    }
  }
  CHECK(loaded + refused == cases);
  CHECK(refused > 0);
  CHECK(loaded > 0);
}
