// replace_toml_table: one table of a TOML file rewritten, the rest of the file
// (other tables, comments, the comments introducing the next table) kept.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/config/toml_table_writer.hpp>
#include <sstream>
#include <string>

#include "support/process.hpp"

using mold::test::TempDir;

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("a TOML table is replaced in place, everything else kept",
          "[config]") {
  TempDir dir;
  const std::string file = dir.write("calibration.toml",
                                     "# the file's comment\n"
                                     "[meta]\n"
                                     "family = \"zimage\"\n"
                                     "\n"
                                     "[denoise.cpu]\n"
                                     "# measured by: an old run\n"
                                     "bytes_per_token = 1\n"
                                     "\n"
                                     "# Introduces the next table.\n"
                                     "[vae_decode.cpu]\n"
                                     "bytes_per_pixel = 960\n");
  mold::replace_toml_table(file, "denoise.cpu",
                           "[denoise.cpu]\n# measured by: a new run\n"
                           "bytes_per_token = 2\n",
                           "--write");
  CHECK(read(file) ==
        "# the file's comment\n"
        "[meta]\n"
        "family = \"zimage\"\n"
        "\n"
        "[denoise.cpu]\n"
        "# measured by: a new run\n"
        "bytes_per_token = 2\n"
        "\n"
        "# Introduces the next table.\n"
        "[vae_decode.cpu]\n"
        "bytes_per_pixel = 960\n");
  // A table the file lacks is appended after an empty line.
  mold::replace_toml_table(file, "text_encode.cpu",
                           "[text_encode.cpu]\nfixed_bytes = 3\n", "--write");
  CHECK(read(file).substr(read(file).size() - 36) ==
        "\n\n[text_encode.cpu]\nfixed_bytes = 3\n");
}

TEST_CASE("a TOML file that cannot be read is named, and nothing is written",
          "[config]") {
  TempDir dir;
  const std::string missing = dir.path() + "/none.toml";
  CHECK_THROWS_WITH(
      mold::replace_toml_table(missing, "a", "[a]\n", "--write"),
      Catch::Contains("--write " + missing + ": cannot read the file"));
  CHECK_FALSE(std::filesystem::exists(missing));
}
