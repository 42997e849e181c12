// Files that are not what a flag expects, given to the real molddiag: every
// case a clear message naming the flag and what the path is, at once (a FIFO
// never blocks), and nothing changed on disk.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

namespace {

struct Molddiag {
  TempDir home;
  mold::test::ProcessResult operator()(const std::vector<std::string>& args) {
    return run_process(kMolddiag, args, mold::test::isolated_env(home));
  }
};

}  // namespace

TEST_CASE("molddiag refuses special files as inputs and outputs, at once",
          "[cli][io]") {
  Molddiag molddiag;
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string device = dir.path() + "/null";
  const bool have_device =
      ::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  const std::string file = dir.write("plain.txt", "not a directory\n");
  const std::vector<std::string> decode = {"vae",        "decode", "--family",
                                           "qwen_image", "--arch", "tiny"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = decode;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::vector<std::string> says;
  };
  std::vector<Case> cases = {
      {with({"--input", fifo, "--output", dir.path() + "/o.safetensors"}),
       2,
       {"--input " + fifo + " is a FIFO"}},
      {with({"--input", file, "--weights", fifo, "--output",
             dir.path() + "/o.safetensors"}),
       2,
       {"--weights " + fifo + " is a FIFO"}},
      {with({"--input", file, "--output", fifo}),
       2,
       {"--output " + fifo + " is a FIFO", "refusing to replace it"}},
      {with({"--input", file, "--output", dir.path()}),
       2,
       {"is a directory", "refusing to replace it"}},
      {{"plugins", "--config", dir.path()},
       1,
       {"is a directory, not a TOML file"}},
      {{"plugins", "--config", fifo}, 1, {"is a FIFO, not a TOML file"}},
      {{"calibrate", "--family", "qwen_image", "--op", "vae_decode", "--write",
        fifo},
       2,
       {"--write " + fifo + " is a FIFO"}},
  };
  if (have_device) {
    cases.push_back({with({"--input", file, "--output", device}),
                     2,
                     {"is a character device", "refusing"}});
    cases.push_back(
        {{"plugins", "--config", device}, 1, {"is a character device"}});
  }
  for (const auto& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    INFO(line);
    const auto r = molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    for (const auto& s : c.says) CHECK_THAT(r.err, Catch::Contains(s));
    CHECK_THAT(r.err, !Catch::Contains("Success"));
  }
  // Nothing replaced.
  CHECK(std::filesystem::is_fifo(fifo));
  if (have_device) CHECK(std::filesystem::is_character_file(device));
  CHECK(std::filesystem::is_directory(dir.path()));

  // A regular file given as a plugin directory says what it is.
  const auto p = molddiag({"plugins", "--plugin-dir", file});
  CHECK(p.exit_code == 0);
  CHECK_THAT(p.out, Catch::Contains("is a regular file, not a directory"));
}
