// docs/http-api.md's examples, run against the real `mold serve --tiny` on
// loopback: every `curl` block of the document is sent as written (its
// method, headers, body and path; `$(base64 -w0 in.png)` becomes a small
// PNG's base64), and answers with a success, unless the block after it is the
// JSON of an error: then the server answers exactly that JSON (a string the
// document ends with " ..." matches a message that starts so). A pipe into
// `grep WORD` checks the answer holds WORD. So an example that drifts from
// the server fails here, as the tables do in api_contract_test.

#include <catch2/catch.hpp>
#include <mold/net/base64.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/server_client.hpp"
#include "support/server_process.hpp"
#include "support/source_images.hpp"

using namespace mold::test;
using Json = nlohmann::json;

namespace {

/// A fenced block of the document: its info string ("json", "") and text.
struct CodeBlock {
  std::string info;
  std::string text;
};

std::vector<CodeBlock> code_blocks(const std::string& doc) {
  std::vector<CodeBlock> blocks;
  std::istringstream lines(doc);
  bool inside = false;
  CodeBlock block;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      if (inside) blocks.push_back(block);
      inside = !inside;
      block = {line.substr(3), ""};
      continue;
    }
    if (inside) block.text += line + "\n";
  }
  return blocks;
}

/// A shell command's words: single quotes, double quotes (with \" and \\),
/// backslash-newline continuations; `|` ends the command and starts the
/// next, returned as a word of its own.
std::vector<std::string> shell_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\\' && i + 1 < command.size() && command[i + 1] == '\n') {
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '|') {
      if (in_word) words.push_back(word);
      words.push_back("|");
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const auto end = command.find('\'', i + 1);
      REQUIRE(end != std::string::npos);
      word += command.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        if (command[i] == '\\' && i + 1 < command.size()) ++i;
        word += command[i];
      }
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

/// One curl example: what it sends and what the pipe after it looks for.
struct CurlExample {
  std::string method = "GET";
  std::string target;
  std::string body;
  std::string content_type;
  std::string grep;  ///< `| grep WORD`
};

CurlExample parse_curl(const std::vector<std::string>& words) {
  CurlExample example;
  REQUIRE(words.at(0) == "curl");
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "|") {
      REQUIRE(i + 2 < words.size());
      REQUIRE(words.at(i + 1) == "grep");
      example.grep = words.at(i + 2);
      break;
    }
    if (w == "-X") {
      example.method = words.at(++i);
    } else if (w == "-H") {
      const std::string header = words.at(++i);
      const auto colon = header.find(':');
      REQUIRE(colon != std::string::npos);
      if (header.substr(0, colon) == "Content-Type")
        example.content_type = header.substr(colon + 2);
    } else if (w == "-d") {
      example.body = words.at(++i);
      if (example.method == "GET") example.method = "POST";
    } else if (w == "-o" || w == "-D") {
      ++i;  // where curl writes: the test reads the answer itself
    } else if (w == "-s" || w == "-N") {
    } else {
      const std::string host = "localhost:7680";
      INFO("a curl word the test does not read: " << w);
      REQUIRE(w.rfind(host, 0) == 0);
      example.target = w.substr(host.size());
    }
  }
  REQUIRE_FALSE(example.target.empty());
  return example;
}

/// Whether `actual` is what the document shows: the same keys and values,
/// where a documented string that ends with " ..." is a prefix.
bool shown_as(const Json& documented, const Json& actual) {
  if (documented.is_object()) {
    if (!actual.is_object() || documented.size() != actual.size()) return false;
    for (const auto& item : documented.items())
      if (!actual.contains(item.key()) ||
          !shown_as(item.value(), actual.at(item.key())))
        return false;
    return true;
  }
  if (documented.is_string() && actual.is_string()) {
    const std::string doc = documented.get<std::string>();
    const std::string dots = " ...";
    if (doc.size() > dots.size() &&
        doc.compare(doc.size() - dots.size(), dots.size(), dots) == 0)
      return actual.get<std::string>().rfind(
                 doc.substr(0, doc.size() - dots.size()), 0) == 0;
  }
  return documented == actual;
}

}  // namespace

TEST_CASE(
    "mold serve: docs/http-api.md's curl examples get the answers the "
    "document shows",
    "[net][serve][contract][docs]") {
  const std::string doc = read_file(std::string(kDocsDir) + "/http-api.md");
  const auto blocks = code_blocks(doc);
  TempDir dir;
  const std::string png_base64 = mold::net::base64_encode(
      read_file(write_source_png(dir.path(), "in.png", 32, 32)));
  ServerProcess server({"--tiny", "--quiet"});
  HttpClient client = client_for(server);
  std::size_t sent = 0, errors = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    std::string command = blocks[b].text;
    if (command.rfind("curl ", 0) != 0) continue;
    const std::string source_png = "$(base64 -w0 in.png)";
    for (auto at = command.find(source_png); at != std::string::npos;
         at = command.find(source_png))
      command.replace(at, source_png.size(), png_base64);
    INFO(blocks[b].text);
    const CurlExample example = parse_curl(shell_words(command));
    const auto r =
        client.request(example.method, example.target, example.body,
                       example.content_type.empty() ? "application/json"
                                                    : example.content_type);
    INFO(r.status << " " << r.body.substr(0, 600));
    ++sent;
    const bool answer_shown =
        b + 1 < blocks.size() && blocks[b + 1].info == "json" &&
        blocks[b + 1].text.find("\"error\"") != std::string::npos;
    if (answer_shown) {
      ++errors;
      const Json documented = Json::parse(blocks[b + 1].text);
      const Json actual = Json::parse(r.body, nullptr, false);
      INFO("documented: " << documented.dump());
      CHECK(r.status >= 400);
      CHECK(shown_as(documented, actual));
    } else {
      CHECK(r.status >= 200);
      CHECK(r.status < 300);
    }
    if (!example.grep.empty())
      CHECK(r.body.find(example.grep) != std::string::npos);
  }
  // The document's examples: health, unload, generate (with and without
  // sources), a stream, metrics, the images routes and the two errors.
  CHECK(sent >= 10);
  CHECK(errors >= 2);
}
