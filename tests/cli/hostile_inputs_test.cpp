// Files that are not what a flag expects, given to the real molddiag: every
// case a clear message naming the flag and what the path is, at once (a FIFO
// never blocks), and nothing changed on disk.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
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

TEST_CASE(
    "molddiag calibrate --write refuses a file that is not a calibration "
    "file, before running anything, and leaves it byte for byte",
    "[cli][io]") {
  Molddiag molddiag;
  TempDir dir;
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i)
    binary[i] = char((i * 131 + 7) % 256);
  const std::string qwen_file =
      std::string(mold::test::kPluginDir) + "/qwen_image.calibration.toml";
  std::ifstream in(qwen_file, std::ios::binary);
  REQUIRE(in);
  const std::string qwen((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>>
      cases = {
          {"binary", {binary, "not valid TOML"}},
          {"notes.txt", {"Some notes: [not toml\n = x\n", "not valid TOML"}},
          {"json.toml", {"{\"a\": 1}\n", "not valid TOML"}},
          {"foreign.toml",
           {"[tool]\nname = \"x\"\n", "must be a table, e.g. [tool.name]"}},
          {"other-family.toml",
           {qwen,
            "this is the calibration file of the qwen_image family, "
            "not of zimage"}},
      };
  for (const auto& [name, content_says] : cases) {
    const auto& [content, says] = content_says;
    INFO(name);
    const std::string path = dir.write(name, content);
    const auto r =
        molddiag({"calibrate", "--family", "zimage", "--op", "vae_decode",
                  "--arch", "tiny", "--sizes", "64", "--write", path});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--write: ") && Catch::Contains(says) &&
                          Catch::Contains("it is left as it is"));
    CHECK(r.out.empty());  // nothing ran
    std::ifstream back(path, std::ios::binary);
    const std::string after((std::istreambuf_iterator<char>(back)),
                            std::istreambuf_iterator<char>());
    CHECK(after == content);
  }
}

TEST_CASE("molddiag refuses numbers out of range, naming flag, value and range",
          "[cli][numbers]") {
  Molddiag molddiag;
  const std::vector<std::string> estimate = {
      "estimate",   "--family",  "qwen_image", "--op",
      "vae_decode", "--backend", "cuda"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = estimate;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      // Once answered exactly 2^63 bytes with exit 0.
      {with({"--width", "2147483647", "--height", "64"}),
       "--width '2147483647' is out of range: give a whole number from 1 to "
       "65536"},
      {with({"--width", "64", "--height", "2147483647"}),
       "--height '2147483647' is out of range"},
      {with({"--width", "3000000000", "--height", "64"}),
       "--width '3000000000' is out of range: give a whole number from 1 to "
       "65536"},
      {with({"--width", "64", "--height", "64", "--batch", "0"}),
       "--batch '0' is out of range: give a whole number from 1 to 1024"},
      {with({"--width", "64", "--height", "64", "--tile", "-1"}),
       "--tile '-1' is out of range: give a whole number from 0 to 65536"},
      {with({"--width", "8.5", "--height", "64"}),
       "--width '8.5' is not a whole number: give a whole number from 1 to "
       "65536"},
      {{"classify", "--family", "qwen_image", "--op", "vae_decode", "--width",
        "99999999999", "--height", "64", "out of memory"},
       "--width '99999999999' is out of range"},
      {{"tiling", "--family", "qwen_image", "--seed", "-1"},
       "--seed '-1' is not a seed: give a whole number from 0 to "
       "18446744073709551615"},
      {{"tiling", "--family", "qwen_image", "--tile", "99999999999"},
       "--tile '99999999999' is out of range: give a whole number from 0 to "
       "1024"},
      {{"tiling", "--family", "qwen_image", "--size", "64", "--overlap", "20"},
       "--overlap 20 must be smaller than the tile, which is 4"},
      {{"vae", "decode", "--family", "qwen_image", "--seed", "1e3", "--input",
        "x", "--output", "y"},
       "--seed '1e3' is not a seed"},
      {{"vae", "decode", "--family", "qwen_image", "--tile", "0", "--input",
        "x", "--output", "y"},
       "--tile '0' is out of range: give a whole number from 1 to 1024"},
      {{"plugins", "--cpu-memory-limit", "1"},
       "--cpu-memory-limit '1' is 1 bytes, below the minimum of 1024.00 KiB"},
      {{"plugins", "--cpu-memory-limit", "0 GiB"}, "below the minimum"},
      {{"plugins", "--cpu-memory-limit", "-8 GiB"}, "is not a byte count"},
  };
  for (const auto& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    INFO(line);
    const auto r = molddiag(c.args);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.says));
    CHECK(r.out.empty());
  }
  // A configured limit below the minimum names the key.
  const std::string config = molddiag.home.write(
      "tiny.toml", "[backends.cpu]\nmemory_limit = \"512\"\n");
  const auto r = molddiag({"plugins", "--config", config});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("backends.cpu.memory_limit") &&
                        Catch::Contains("below the minimum"));
}

TEST_CASE(
    "classify prints valid JSON for invalid UTF-8 and escapes control "
    "characters",
    "[cli][text]") {
  Molddiag molddiag;
  const std::string text =
      "CUDA out of memory. Tried to allocate 2.00 GiB \xff\xfe\x1b[2J here";
  const auto j = run_process(kMolddiag, {"classify", "--json"},
                             mold::test::isolated_env(molddiag.home), text);
  INFO(j.err);
  CHECK(j.exit_code == 0);
  const auto parsed = nlohmann::json::parse(j.out);  // valid JSON
  CHECK(parsed["is_oom"] == true);
  CHECK(parsed["message_invalid_utf8"] == true);
  CHECK(parsed["requested_bytes"] == 2 * 1024ull * 1024 * 1024);
  const auto not_oom = run_process(kMolddiag, {"classify", "--json"},
                                   mold::test::isolated_env(molddiag.home),
                                   "segfault \xc3\x28 at 0x0");
  CHECK(not_oom.exit_code == 1);
  CHECK(nlohmann::json::parse(not_oom.out)["message_invalid_utf8"] == true);
  // Text: the escape sequence is shown, not sent to the terminal.
  const auto t = run_process(kMolddiag, {"classify"},
                             mold::test::isolated_env(molddiag.home), text);
  CHECK(t.exit_code == 0);
  CHECK(t.out.find('\x1b') == std::string::npos);
  CHECK_THAT(t.out, Catch::Contains("\\x1b[2J"));
}
