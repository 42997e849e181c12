// The HTTP API as a contract, against the real `mold serve` on loopback:
// docs/http-api.md's tables (each error code's status, /metrics' names and
// types, the PNG's text chunks, the generate headers, /health) are read out of
// the document and checked against a running server, so that the two cannot
// drift; errors speak the client's JSON, never mold run's flags; values quoted
// back are capped; and large bodies leave the server's memory where it was.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <mold/net/api_error.hpp>
#include <mold/net/base64.hpp>
#include <mold/runtime/png.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/api_routes.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/sanitizer.hpp"
#include "support/serve_requests.hpp"
#include "support/server_client.hpp"
#include "support/server_process.hpp"
#include "support/wait.hpp"

using namespace mold::test;

namespace {

constexpr const char* kKey = "contract-key";

std::string api_doc() {
  return read_file(std::string(kDocsDir) + "/http-api.md");
}

/// The text of the section whose heading line is `heading`, up to the next
/// heading of the same or a higher level.
std::string doc_section(const std::string& doc, const std::string& heading) {
  const auto at = doc.find("\n" + heading + "\n");
  INFO(heading);
  REQUIRE(at != std::string::npos);
  const std::string level = heading.substr(0, heading.find(' ') + 1);
  const auto start = at + heading.size() + 2;
  std::size_t end = std::string::npos;
  for (std::size_t pos = start;
       (pos = doc.find("\n#", pos)) != std::string::npos; ++pos) {
    const std::string marks =
        doc.substr(pos + 1, doc.find(' ', pos + 1) - pos - 1);
    if (marks.find_first_not_of('#') == std::string::npos &&
        marks.size() <= level.size() - 1) {
      end = pos;
      break;
    }
  }
  return doc.substr(start, end == std::string::npos ? end : end - start);
}

/// The cells of each table row in `text` whose first cell starts with a
/// backtick (a code or a name), trimmed.
std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t pos = 1;
    for (std::size_t bar; (bar = line.find(" |", pos)) != std::string::npos;
         pos = bar + 2) {
      std::string cell = line.substr(pos, bar - pos);
      cell.erase(0, cell.find_first_not_of(' '));
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

/// The `quoted` words of `text`, in order.
std::vector<std::string> quoted(const std::string& text) {
  std::vector<std::string> out;
  const std::regex word("`([^`]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

/// The paragraph of `section` that starts with `lead` ("Headers:").
std::string paragraph(const std::string& section, const std::string& lead) {
  const auto at = section.find("\n" + lead);
  INFO(lead);
  REQUIRE(at != std::string::npos);
  return section.substr(at + 1, section.find("\n\n", at + 1) - at - 1);
}

/// "`200 {...}`" in `text`: the JSON object answered with `status`.
Json documented_body(const std::string& text, int status) {
  for (const auto& q : quoted(text))
    if (q.rfind(std::to_string(status) + " {", 0) == 0)
      return Json::parse(q.substr(4));
  FAIL("no `" << status << " {...}` in the text");
  return {};
}

std::set<std::string> keys_of(const Json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

/// A raw request's answer: status and JSON body.
struct RawAnswer {
  int status = 0;
  Json body;
};
RawAnswer raw_answer(int port, const std::string& bytes, int timeout_ms) {
  const std::string r = raw_exchange(port, bytes, timeout_ms);
  RawAnswer out;
  out.status = status_of_response(r);
  const auto body = r.find("\r\n\r\n");
  if (body != std::string::npos)
    out.body = Json::parse(r.substr(body + 4), nullptr, false);
  return out;
}

std::string raw_post(const std::string& extra_headers, const std::string& body,
                     const std::string& content_length = "") {
  return "POST /api/generate HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
         "Authorization: Bearer " +
         std::string(kKey) + "\r\n" + extra_headers + "Content-Length: " +
         (content_length.empty() ? std::to_string(body.size())
                                 : content_length) +
         "\r\n\r\n" + body;
}

/// The request schema's flags and the request's own, as mold run spells
/// them: none may appear in an answer to an HTTP client.
const std::regex& cli_flag() {
  static const std::regex flag(
      "--(prompt|negative|width|height|steps|guidance|seed|batch|image|tiny)"
      "\\b");
  return flag;
}

}  // namespace

TEST_CASE("mold serve: docs/http-api.md's routes are the server's",
          "[net][serve][contract]") {
  // Each route is a "### `METHOD PATH`" heading of its own.
  std::set<std::string> documented;
  const std::string doc = api_doc();
  const std::regex heading("\n### `((GET|POST|PUT|DELETE|PATCH) /[^`]*)`\n");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), heading);
       it != std::sregex_iterator(); ++it)
    documented.insert((*it)[1]);
  const auto names = mold_cli::ApiRoutes::route_names();
  CHECK(documented == std::set<std::string>(names.begin(), names.end()));
  // And the server answers each (a route it did not have would be "no
  // route"); a path the document does not name is 404.
  ServerProcess server({"--tiny", "--quiet"});
  HttpClient client = client_for(server);
  for (const std::string& route : documented) {
    const auto space = route.find(' ');
    const auto r =
        client.request(route.substr(0, space), route.substr(space + 1), "{}");
    INFO(route << ": " << r.status << " " << r.body);
    CHECK(r.body.find("no route") == std::string::npos);
  }
  CHECK(client.request("GET", "/v1/no-such-route").status == 404);
}

TEST_CASE(
    "mold serve: docs/http-api.md's error codes are the server's, each "
    "answered with its documented status",
    "[net][serve][contract]") {
  const std::string doc = api_doc();
  std::map<std::string, int> documented;
  for (const auto& row : table_rows(doc_section(doc, "## Errors"))) {
    REQUIRE(row.size() >= 2);
    const auto names = quoted(row[0]);
    REQUIRE(names.size() == 1);
    documented[names[0]] = std::stoi(row[1]);
  }
  // The document's table and the server's are the same codes and statuses.
  std::map<std::string, int> served;
  for (const auto& [code, status] : mold::net::code_statuses())
    served[std::string(code)] = status;
  CHECK(documented == served);

  // Each code a client can bring about is answered as documented.
  ServerProcess server(
      {"--tiny", "--quiet", "--token", kKey, "--read-timeout", "1"});
  ServerProcess small({"--tiny", "--quiet", "--cpu-memory-limit", "8 MiB"});
  HttpClient client = client_for(server, kKey);
  HttpClient anonymous = client_for(server);
  const auto json = [](const mold::net::ClientResponse& r) {
    return RawAnswer{r.status, Json::parse(r.body, nullptr, false)};
  };
  const std::map<std::string, std::function<RawAnswer()>> triggers = {
      {"BAD_REQUEST",
       [&] { return raw_answer(server.port(), "NOT HTTP\r\n\r\n", 10000); }},
      {"INVALID_JSON",
       [&] { return json(client.request("POST", "/api/generate", "{")); }},
      {"UNAUTHORIZED",
       [&] { return json(anonymous.request("GET", "/api/status")); }},
      {"NOT_FOUND", [&] { return json(client.request("GET", "/nope")); }},
      {"MODEL_NOT_FOUND",
       [&] {
         return json(client.request(
             "POST", "/api/generate",
             Json{{"model", "no-such-model"}, {"prompt", "x"}}.dump()));
       }},
      {"METHOD_NOT_ALLOWED",
       [&] { return json(client.request("GET", "/api/generate")); }},
      {"REQUEST_TIMEOUT",
       [&] {
         // Half a body, then silence past --read-timeout 1.
         return raw_answer(
             server.port(),
             raw_post("Content-Type: application/json\r\n", "{", "100"), 10000);
       }},
      {"PAYLOAD_TOO_LARGE",
       [&] {
         return raw_answer(
             server.port(),
             raw_post("Content-Type: application/json\r\n", "", "999999999999"),
             10000);
       }},
      {"UNSUPPORTED_MEDIA_TYPE",
       [&] {
         return json(
             client.request("POST", "/api/generate", fox(1), "text/plain"));
       }},
      {"VALIDATION_ERROR",
       [&] {
         return json(client.request(
             "POST", "/api/generate",
             Json{{"model", "z-image-turbo"}, {"prompt", "x"}, {"width", 17}}
                 .dump()));
       }},
      {"NEVER_FITS",
       [&] {
         HttpClient c = client_for(small);
         return json(c.request("POST", "/api/generate", fox(1)));
       }},
      {"HEADERS_TOO_LARGE",
       [&] {
         return raw_answer(server.port(),
                           "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " +
                               std::string(20 << 10, 'x') + "\r\n\r\n",
                           10000);
       }},
  };
  for (const auto& [code, trigger] : triggers) {
    INFO(code);
    REQUIRE(documented.count(code));
    const RawAnswer answer = trigger();
    CHECK(answer.status == documented.at(code));
    CHECK(answer.body.value("code", "") == code);
  }
  CHECK(server.alive());
}

TEST_CASE(
    "mold serve: /metrics, the image's text chunks and headers, and /health "
    "are what docs/http-api.md says",
    "[net][serve][contract]") {
  const std::string doc = api_doc();
  const SlowGate gate;
  ServerProcess server({"--tiny", "--quiet", "--plugin-dir", kFaultyPluginDir},
                       gate.env());
  HttpClient client = client_for(server);

  // One image with a negative prompt: every chunk and header is written.
  Json body = Json::parse(fox(7));
  body["negative_prompt"] = "blurry";
  const auto image = client.request("POST", "/api/generate", body.dump());
  REQUIRE(image.status == 200);
  const std::string generate = doc_section(doc, "### `POST /api/generate`");
  for (const auto& header : quoted(paragraph(generate, "Headers:"))) {
    if (header.rfind("x-mold-", 0) != 0) continue;  // MODEL:VARIANT
    INFO(header);
    CHECK_FALSE(image.header(header).empty());
  }
  std::set<std::string> chunks;
  for (const auto& [key, value] :
       mold::decode_png("the answer", image.body).text)
    chunks.insert(key);
  const auto listed = quoted(paragraph(generate, "Text chunks:"));
  CHECK(chunks == std::set<std::string>(listed.begin(), listed.end()));

  // Every documented metric is exported with its type, and every one
  // exported is documented.
  std::map<std::string, std::string> documented;
  for (const auto& row : table_rows(doc_section(doc, "### `GET /metrics`"))) {
    REQUIRE(row.size() >= 2);
    for (const auto& name : quoted(row[0])) documented[name] = row[1];
  }
  const auto metrics = client.request("GET", "/metrics");
  REQUIRE(metrics.status == 200);
  std::map<std::string, std::string> exported;
  std::istringstream lines(metrics.body);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string hash, kind, name, type;
    words >> hash >> kind >> name >> type;
    if (hash == "#" && kind == "TYPE" && name.rfind("mold_", 0) == 0)
      exported[name] = type;
  }
  CHECK(exported == documented);

  // /health: its documented keys, ok and while draining.
  const std::string health = doc_section(doc, "### `GET /health`");
  const auto ok = client.request("GET", "/health");
  CHECK(ok.status == 200);
  CHECK(keys_of(json_of(ok)) == keys_of(documented_body(health, 200)));
  int slow_status = 0;
  std::thread running([&] {
    HttpClient c = client_for(server);
    slow_status = c.request("POST", "/api/generate", slow(1)).status;
  });
  wait_busy(client);
  kill(server.pid(), SIGTERM);
  wait_until(
      [&] {
        return server.log().find("finishing queued work") != std::string::npos;
      },
      "the server to start draining");
  const auto draining = client.request("GET", "/health");
  CHECK(draining.status == 503);
  const Json said = json_of(draining);
  CHECK(said["status"] == documented_body(health, 503)["status"]);
  CHECK(keys_of(said) == keys_of(documented_body(health, 503)));
  gate.open();
  CHECK(server.stop(120) == 0);
  running.join();
  CHECK(slow_status == 200);
}

TEST_CASE(
    "mold serve: errors name the JSON the client sent, never mold run's "
    "flags, and quote no more than 64 characters of it",
    "[net][serve][contract]") {
  ServerProcess server({"--tiny", "--quiet"});
  HttpClient client = client_for(server);
  const auto refused = [&](const std::string& body,
                           const std::string& content_type =
                               "application/json") {
    const auto r = client.request("POST", "/api/generate", body, content_type);
    INFO(r.body.substr(0, 400));
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
    CHECK_FALSE(std::regex_search(r.body, cli_flag()));
    CHECK(r.body.size() < 600);
    return Json::parse(r.body, nullptr, false).value("error", "");
  };
  const auto request = [](Json fields) {
    fields["prompt"] = "a fox";
    if (!fields.contains("model")) fields["model"] = "z-image-turbo";
    return fields.dump();
  };
  // A family's limits, checked when the request is resolved.
  CHECK_THAT(refused(request({{"width", 17}})),
             Catch::StartsWith("width 17: Z-Image makes images whose sides "
                               "are multiples of 16") &&
                 Catch::Contains("try 16"));
  CHECK_THAT(refused(request({{"height", 8192}})),
             Catch::StartsWith("height 8192: "));
  CHECK_THAT(refused(request({{"model", "qwen-image"}, {"steps", 1}})),
             Catch::StartsWith("steps 1: Qwen-Image takes at least 2 steps"));
  // Source images: an edit model without, a text-to-image model with.
  const std::string png = mold::net::base64_encode(mold::encode_png(
      "source", std::vector<std::uint8_t>(32 * 32 * 3, 128).data(), 32, 32,
      {}));
  CHECK_THAT(refused(request({{"model", "qwen-image-edit-2511"}})),
             Catch::StartsWith("images: ") &&
                 Catch::Contains("edits images: give at least one"));
  CHECK_THAT(refused(request({{"images", Json::array({png})}})),
             Catch::StartsWith("images: ") &&
                 Catch::Contains("takes no source image"));
  CHECK_THAT(refused(request(
                 {{"model", "qwen-image"}, {"images", Json::array({png})}})),
             Catch::StartsWith("images: "));
  // The schema's own ranges.
  CHECK_THAT(refused(request({{"guidance", 1000}})),
             Catch::StartsWith("guidance: should be a number from 0 to 100"));
  CHECK_THAT(refused(request({{"steps", 0}})), Catch::StartsWith("steps: "));

  // Echoes are capped: a number of 100,000 digits, a key as long, a long
  // Content-Type. The project's own words, not the parser's.
  const std::string digits = "1" + std::string(100000, '0');
  CHECK_THAT(refused("{\"model\":\"z-image-turbo\",\"prompt\":\"x\","
                     "\"width\":" +
                     digits + "}"),
             Catch::StartsWith("width: a number beyond what a 64-bit float "
                               "holds"));
  CHECK_THAT(refused(Json{{std::string(100000, 'k'), 1}}.dump()),
             Catch::StartsWith(std::string(64, 'k') + "... (100000 bytes): "
                                                      "is not a field"));
  CHECK_THAT(refused(fox(1), "text/" + std::string(8000, 'x')),
             Catch::Contains("... (8005 bytes)"));
  CHECK_THAT(refused("{\"prompt\": \"" + std::string(100000, 'x')),
             Catch::StartsWith("the body is not valid JSON"));
  CHECK(server.alive());
}

TEST_CASE(
    "mold serve: after many 50 MB request bodies the resident set is back "
    "near where it was",
    "[net][serve][memory]") {
  ServerProcess server({"--tiny", "--quiet"});
  HttpClient client = client_for(server);
  const std::string big(50 << 20, 'a');
  const std::vector<std::string> bodies = {
      // A prompt above the limit, an unknown field, an image that is not one.
      "{\"model\":\"z-image-turbo\",\"prompt\":\"" + big + "\"}",
      "{\"" + big + "\":1}",
      "{\"model\":\"z-image-turbo\",\"prompt\":\"x\",\"images\":[\"" +
          std::string(50 << 20, 'Q') + "\"]}"};
  // Warm up: one of each body, then an image (the model loads; its end
  // returns the heap's free pages, as every job's cleanup does).
  for (const auto& body : bodies)
    REQUIRE(client.request("POST", "/api/generate", body).status == 422);
  REQUIRE(client.request("POST", "/api/generate", fox(1)).status == 200);
  wait_idle(client);
  // The heap's part of the resident set: the shared libraries' pages come and
  // go with the page cache when other processes need memory.
  const long long baseline = server.anonymous_rss();
  REQUIRE(baseline > 0);
  for (int i = 0; i < 6; ++i)
    REQUIRE(client.request("POST", "/api/generate", bodies[i % 3]).status ==
            422);
  const long long after = server.anonymous_rss();
  INFO("anonymous resident before " << baseline / (1 << 20)
                                    << " MiB, after 6 more bodies "
                                    << after / (1 << 20) << " MiB");
#if !defined(MOLD_TEST_SANITIZED)
  CHECK(after <= baseline + (16ll << 20));
#endif
  CHECK(client.request("POST", "/api/generate", fox(2)).status == 200);
}

TEST_CASE(
    "mold serve: an OpenAI error's param is the request field or null; n is "
    "bounded by the queue, and says so",
    "[net][serve][openai][contract]") {
  ServerProcess server({"--tiny", "--quiet", "--queue", "4"});
  HttpClient client = client_for(server);
  struct Case {
    std::string body;
    Json param;
    std::string says;
  };
  const std::vector<Case> cases = {
      // The queue holds 4 behind the running job: 5 a request.
      {R"({"prompt":"x","n":10})", "n", "takes at most 5 a request"},
      {R"({"prompt":"x","n":0})", "n", "out of range"},
      {"[1,2]", nullptr, "JSON object"},
      {R"("the prompt")", nullptr, "JSON object"},
      {R"({"prompt":"x","colour":"red"})", "colour", "not a field"},
      {R"({"prompt":"x","images":["aaaa"]})", "images", "not a field"},
      {R"({"prompt":"x","quality":"hd"})", "quality", "quality"},
      {R"({"prompt":"x","size":"17x17","steps":2})", "size", "size \"17x17\""},
      {R"({"prompt":"x","steps":0})", "steps", "steps"},
      {R"({"prompt":"x","n":2,"seed":18446744073709551615})", "seed", "2^64"},
      {R"({"prompt":5})", "prompt", "prompt"},
      {R"({"prompt":"x","width":1e400})", "width", "64-bit float"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    const auto r = client.request("POST", "/v1/images/generations", c.body);
    INFO(r.status << " " << r.body);
    CHECK(r.status == 400);
    const Json error = json_of(r)["error"];
    CHECK(error["param"] == c.param);
    CHECK_THAT(error["message"].get<std::string>(), Catch::Contains(c.says));
  }
  // Within the bound, all of them.
  const auto five = client.request(
      "POST", "/v1/images/generations",
      R"({"prompt":"x","n":5,"size":"64x64","steps":1,"tiny":true})");
  INFO(five.body.substr(0, 300));
  REQUIRE(five.status == 200);
  CHECK(json_of(five)["data"].size() == 5);
}

TEST_CASE(
    "mold serve: /v1/models lists the models it runs; an image's address "
    "takes a query's extra parameters",
    "[net][serve][openai][contract]") {
  ServerProcess server({"--tiny", "--quiet"});
  HttpClient client = client_for(server);
  const auto list = client.request("GET", "/v1/models");
  REQUIRE(list.status == 200);
  const Json models = json_of(list);
  CHECK(models["object"] == "list");
  std::set<std::string> ids;
  for (const auto& m : models["data"]) {
    CHECK(m["object"] == "model");
    CHECK(m["created"].is_number_integer());
    CHECK(m["owned_by"].is_string());
    ids.insert(m["id"].get<std::string>());
  }
  for (const char* id : {"z-image-turbo", "z-image-turbo:bf16",
                         "qwen-image-edit-2511", "qwen-image-edit-2511:q4"})
    CHECK(ids.count(id) == 1);
  // The id as clients send it, percent-encoded.
  const auto one =
      client.request("GET", "/v1/models/qwen-image-edit-2511%3Aq4");
  INFO(one.body);
  REQUIRE(one.status == 200);
  CHECK(json_of(one)["id"] == "qwen-image-edit-2511:q4");
  const auto none = client.request("GET", "/v1/models/dall-e-3");
  CHECK(none.status == 404);
  CHECK(json_of(none)["error"]["code"] == "model_not_found");
  CHECK_THAT(json_of(none)["error"]["message"].get<std::string>(),
             Catch::Contains("z-image-turbo"));
  CHECK(client.request("GET", "/v1/models/").status == 404);
  CHECK(client.request("GET", "/v1/models/a/b").status == 404);
  CHECK(client.request("POST", "/v1/models", "{}").status == 405);
  // Without weights it runs nothing and says so.
  {
    TempDir empty;
    ServerProcess bare({"--quiet", "--model-dir", empty.path()});
    HttpClient bare_client = client_for(bare);
    const auto bare_list = bare_client.request("GET", "/v1/models");
    REQUIRE(bare_list.status == 200);
    CHECK(json_of(bare_list)["data"].empty());
  }

  const auto url = client.request(
      "POST", "/v1/images/generations",
      R"({"prompt":"x","size":"64x64","steps":1,"response_format":"url"})");
  REQUIRE(url.status == 200);
  const std::string address = json_of(url)["data"][0]["url"];
  const std::string target = address.substr(address.find("/v1/"));
  const std::string id = target.substr(target.find("id=") + 3);
  for (const std::string& query :
       {"?id=" + id + "&x=1", "?utm_source=cdn&id=" + id, "?id=" + id + "&"}) {
    INFO(query);
    const auto r = client.request("GET", "/v1/images/file" + query);
    CHECK(r.status == 200);
    CHECK(r.header("Content-Type") == "image/png");
  }
  CHECK(client.request("GET", "/v1/images/file?id=" + id + "x").status == 404);
  CHECK(client.request("GET", "/v1/images/file?id=%zz").status == 404);
}
