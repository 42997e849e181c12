// molddiag tokenize, run as the real binary on the Qwen3 tokenizer files.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::run_molddiag;
using mold::test::TempDir;

namespace {

/// A tokenizer/ folder with the Qwen3 files, tokenizer.json decompressed from
/// the committed .xz.
const std::string& qwen3_dir() {
  static TempDir dir;
  static const bool made = [] {
    const std::string data =
        std::string(mold::test::kDataDir) + "/tokenizer/qwen3";
    const std::string command = "xz -dc '" + data + "/tokenizer.json.xz' > '" +
                                dir.path() + "/tokenizer.json' && cp '" + data +
                                "/tokenizer_config.json' '" + dir.path() + "/'";
    if (std::system(command.c_str()) != 0)
      throw std::runtime_error("could not run: " + command);
    return true;
  }();
  (void)made;
  return dir.path();
}

const std::string kFoxIds =
    "151644 872 198 64 2518 38835 304 279 11794 151645 198 151644 77091 198\n";

}  // namespace

TEST_CASE("molddiag tokenize prints the ids of a prompt", "[cli][tokenize]") {
  auto r = run_molddiag({"tokenize", "--family", "zimage", "--tokenizer",
                         qwen3_dir(), "--chat", "a red fox in the snow"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == kFoxIds);
  CHECK(r.err.empty());

  r = run_molddiag({"tokenize", "--family", "zimage", "--tokenizer",
                    qwen3_dir(), "a red fox"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "64 2518 38835\n");

  r = run_molddiag(
      {"tokenize", "--family", "zimage", "--tokenizer", qwen3_dir(), ""});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "\n");
}

TEST_CASE("molddiag tokenize --json gives ids, tokens and the count",
          "[cli][tokenize]") {
  const auto r =
      run_molddiag({"tokenize", "--family", "zimage", "--tokenizer",
                    qwen3_dir(), "--chat", "--json", "a red fox in the snow"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["count"] == 14);
  CHECK(j["ids"].size() == 14);
  CHECK(j["ids"][0] == 151644);
  CHECK(j["tokens"][0] == "<|im_start|>");
  CHECK(j["tokens"][3] == "a");
  CHECK(j["tokens"][4] == "\xc4\xa0red");  // "Ġred"
  CHECK(j["tokens"][13] == "\xc4\x8a");    // "Ċ"
}

TEST_CASE("molddiag tokenize reads the text from stdin with '-'",
          "[cli][tokenize]") {
  TempDir home;
  const auto r = mold::test::run_process(
      mold::test::kMolddiag,
      {"tokenize", "--family", "zimage", "--tokenizer", qwen3_dir(), "--chat",
       "-"},
      mold::test::isolated_env(home), "a red fox in the snow");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == kFoxIds);
  // An endless input is cut at 16 MiB, not read to the end of memory.
  const auto zero =
      mold::test::run_process("/bin/sh",
                              {"-c", std::string(mold::test::kMolddiag) +
                                         " tokenize --family zimage "
                                         "--tokenizer " +
                                         qwen3_dir() + " - < /dev/zero"},
                              mold::test::isolated_env(home));
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Catch::Contains("more than 16777216 bytes"));
}

TEST_CASE("molddiag tokenize uses the tokenizer the family's plugin ships",
          "[cli][tokenize]") {
  auto r = run_molddiag(
      {"tokenize", "--family", "zimage", "--chat", "a red fox in the snow"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == kFoxIds);

  // Qwen-Image's Qwen2.5-VL shares the vocabulary: the same ids, special
  // tokens included.
  const std::string text =
      "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|>"
      "<|vision_end|>a red fox<|im_end|>";
  r = run_molddiag({"tokenize", "--family", "qwen_image", text});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto z = run_molddiag({"tokenize", "--family", "zimage", text});
  REQUIRE(z.exit_code == 0);
  CHECK(r.out == z.out);
  CHECK_THAT(r.out, Catch::Contains("151652") && Catch::Contains("151655") &&
                        Catch::Contains("151653"));

  // A family that ships none: the message says what to give.
  r = run_molddiag({"tokenize", "--family", "faulty", "--plugin-dir",
                    mold::test::kFaultyPluginDir, "a fox"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("family 'faulty' ships no tokenizer") &&
                        Catch::Contains("--tokenizer DIR"));
}

TEST_CASE("molddiag tokenize: usage errors and bad files", "[cli][tokenize]") {
  auto r = run_molddiag({"tokenize", "--tokenizer", qwen3_dir(), "a fox"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("family"));

  r = run_molddiag(
      {"tokenize", "--family", "zimage", "--tokenizer", qwen3_dir()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("text"));

  r = run_molddiag(
      {"tokenize", "--family", "no_such", "--tokenizer", qwen3_dir(), "a fox"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("no family 'no_such' is registered") &&
                        Catch::Contains("zimage") &&
                        Catch::Contains("qwen_image"));

  r = run_molddiag({"tokenize", "--family", "qwen_image", "--tokenizer",
                    qwen3_dir(), "--chat", "a fox"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("no chat template for family 'qwen_image'"));

  r = run_molddiag({"tokenize", "--family", "zimage", "--tokenizer",
                    qwen3_dir(), "a \xff fox"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("not valid UTF-8 at byte offset 2"));

  TempDir empty;
  r = run_molddiag(
      {"tokenize", "--family", "zimage", "--tokenizer", empty.path(), "a fox"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("tokenizer.json: no such file"));

  empty.write("tokenizer.json", "{\"model\": ");
  empty.write("tokenizer_config.json", "{}");
  r = run_molddiag(
      {"tokenize", "--family", "zimage", "--tokenizer", empty.path(), "a fox"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("is not valid JSON"));

  r = run_molddiag({"tokenize", "--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("molddiag tokenize --family F"));
}
