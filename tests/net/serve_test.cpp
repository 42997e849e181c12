// The real `mold serve` on loopback (started by each test): every route, the
// images it makes (the same bytes as mold run), streams, validation, keys,
// admission by memory, the bounded queue, 200 clients at once, hostile
// bodies, unloading and a graceful stop.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/net/base64.hpp>
#include <mold/net/http_client.hpp>
#include <mold/net/sse.hpp>
#include <mold/plan/generate_schema.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "support/mutations.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/sanitizer.hpp"
#include "support/serve_requests.hpp"
#include "support/server_client.hpp"
#include "support/server_process.hpp"
#include "support/wait.hpp"

// Under AddressSanitizer (MOLD_TEST_SANITIZED) freed memory is quarantined and
// the allocator's own bookkeeping grows: the resident set is not the program's
// to judge.

using namespace mold::test;
using mold::net::ClientResponse;
using mold::net::HttpClient;
using Json = nlohmann::json;
namespace fs = std::filesystem;

using mold::test::read_file;

using mold::test::client_for;

TEST_CASE(
    "mold serve --threads sets the compute pools, --io-threads the "
    "connections'",
    "[net][serve][threads]") {
  ServerProcess server(
      {"--tiny", "--quiet", "--threads", "2", "--io-threads", "1"},
      {{"OMP_WAIT_POLICY", kUnset}});
  HttpClient client = client_for(server);
  CHECK(client.request("POST", "/api/generate", fox(1)).status == 200);
  INFO(server.log());
  CHECK_THAT(server.log(), Catch::Contains("2 compute threads (libtorch 2") &&
                               Catch::Contains("OMP_WAIT_POLICY=passive"));
}

TEST_CASE("mold serve: status, models, memory, health and metrics",
          "[net][serve]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  const auto health = client.request("GET", "/health");
  CHECK(health.status == 200);
  CHECK(json_of(health)["status"] == "ok");
  CHECK(health.header("X-Request-ID").size() > 0);

  const Json status = json_of(client.request("GET", "/api/status"));
  CHECK(status["backend"] == "cpu");
  CHECK(status["device"].get<std::string>().size() > 0);
  CHECK(status["memory"]["total"].get<std::uint64_t>() > 0);
  CHECK(status["queue"]["capacity"] == 16);
  CHECK(status["queue"]["depth"] == 0);
  CHECK(status["busy"] == false);
  CHECK(status["models"].empty());

  const Json models = json_of(client.request("GET", "/api/models"));
  bool found = false;
  for (const auto& m : models["models"])
    if (m["name"] == "z-image-turbo") found = m["runnable"] == true;
  CHECK(found);

  CHECK(
      json_of(client.request("GET", "/api/memory"))["last_request"].is_null());
  REQUIRE(client.request("POST", "/api/generate", fox(1)).status == 200);

  const Json after = json_of(client.request("GET", "/api/status"));
  REQUIRE(after["models"].size() == 1);
  CHECK(after["models"][0]["model"] == "z-image-turbo");
  CHECK(after["models"][0]["seeded_weights"] == true);
  CHECK(after["models"][0]["components"].size() == 3);
  CHECK(after["requests"]["served"] == 1);

  const Json memory = json_of(client.request("GET", "/api/memory"));
  CHECK(memory["now"]["allocated"].get<std::uint64_t>() > 0);
  const Json& last = memory["last_request"];
  CHECK(last["status"] == "ok");
  CHECK(last["seed"] == 1);
  REQUIRE(last["phases"].size() == 3);
  CHECK(last["phases"][0]["phase"] == "text_encode");
  CHECK(last["phases"][1]["phase"] == "denoise");
  CHECK(last["phases"][2]["phase"] == "vae_decode");
  for (const auto& phase : last["phases"]) {
    CHECK(phase["after"]["peak_allocated"].get<std::uint64_t>() >=
          phase["before"]["allocated"].get<std::uint64_t>());
    CHECK(phase["estimate_bytes"].get<std::uint64_t>() > 0);
  }
  CHECK(last["after_cleanup"]["allocated"].get<std::uint64_t>() > 0);

  const auto metrics = client.request("GET", "/metrics");
  CHECK(metrics.status == 200);
  CHECK_THAT(metrics.header("Content-Type"), Catch::Contains("text/plain"));
  for (const char* line :
       {"mold_http_requests_total{method=\"POST\",route=\"/api/generate\","
        "status=\"200\"} 1",
        "mold_generations_total{outcome=\"ok\"} 1", "mold_queue_depth 0",
        "mold_queue_capacity 16", "mold_models_loaded 1",
        "mold_cache_loads_total{component=\"transformer\"} 1",
        "mold_phase_duration_seconds_count{phase=\"denoise\",status=\"done\"} "
        "1",
        "mold_device_total_bytes{backend=\"cpu\"}",
        "mold_allocated_bytes{backend=\"cpu\"}",
        "mold_reserved_bytes{backend=\"cpu\"}", "mold_host_rss_bytes",
        "# TYPE mold_http_request_duration_seconds histogram"})
    CHECK_THAT(metrics.body, Catch::Contains(line));
  // One JSON log line per request, with its id.
  const std::string log = server.log();
  CHECK_THAT(log, Catch::Contains("\"path\":\"/api/generate\""));
  CHECK_THAT(log, Catch::Contains(health.header("X-Request-ID")));
}

TEST_CASE("mold serve: an image is the same bytes mold run makes",
          "[net][serve]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  const auto r = client.request("POST", "/api/generate", fox(42));
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type") == "image/png");
  CHECK(r.header("x-mold-seed-used") == "42");
  TempDir out;
  const auto local =
      run_mold({"run", "z-image-turbo", "a red fox in the snow", "--tiny",
                "--width", "64", "--height", "64", "--steps", "2", "--seed",
                "42", "-o", out.path()});
  REQUIRE(local.exit_code == 0);
  CHECK(read_file(fs::path(out.path()) / "z-image-turbo-42.png") == r.body);

  // No seed: the server picks one and says which; it makes the same image.
  Json body = Json::parse(fox(0));
  body.erase("seed");
  const auto picked = client.request("POST", "/api/generate", body.dump());
  REQUIRE(picked.status == 200);
  const std::string seed = picked.header("x-mold-seed-used");
  REQUIRE_FALSE(seed.empty());
  const auto again =
      client.request("POST", "/api/generate", fox(std::stoull(seed)));
  CHECK(again.body == picked.body);
}

TEST_CASE("mold serve: the stream carries each phase with its memory",
          "[net][serve][stream]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  const Streamed s = stream(client, fox(7));
  REQUIRE(s.status == 200);
  REQUIRE(s.events.size() > 4);
  CHECK(s.events.back().event == "complete");
  int starts = 0, dones = 0, steps = 0;
  for (const auto& e : s.events) {
    if (e.event != "progress") continue;
    const Json data = Json::parse(e.data);
    if (data["kind"] != "phase") continue;
    const Json& ev = data["event"];
    if (ev["status"] == "start") ++starts;
    if (ev["status"] == "done") {
      ++dones;
      CHECK(ev["after"]["peak_allocated"].get<std::uint64_t>() > 0);
      CHECK(ev["estimate_bytes"].get<std::uint64_t>() > 0);
    }
    if (ev["status"] == "step") {
      ++steps;
      CHECK(ev["steps"] == 2);
    }
  }
  CHECK(starts == 3);
  CHECK(dones == 3);
  CHECK(steps == 2);
  const Json complete = Json::parse(s.events.back().data);
  CHECK(complete["seed"] == 7);
  const auto png =
      mold::net::base64_decode(complete["png_base64"].get<std::string>());
  REQUIRE(png);
  CHECK(png->substr(1, 3) == "PNG");
  CHECK(complete["png_bytes"] == png->size());
}

TEST_CASE("mold serve: bad requests are refused naming what is wrong",
          "[net][serve][hostile]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  struct Case {
    std::string method, path, body, type;
    int status;
    std::string code, says;
  };
  const std::vector<Case> cases = {
      {"POST", "/api/generate", "{not json", "application/json", 400,
       "INVALID_JSON", "not valid JSON"},
      {"POST", "/api/generate", std::string(100, '[') + std::string(100, ']'),
       "application/json", 400, "INVALID_JSON", "32 deep"},
      {"POST", "/api/generate", "[1,2]", "application/json", 422,
       "VALIDATION_ERROR", "JSON object"},
      {"POST", "/api/generate", R"({"prompt":"x"})", "application/json", 422,
       "VALIDATION_ERROR", "model: is required"},
      {"POST", "/api/generate", R"({"model":"z-image-turbo","prompt":5})",
       "application/json", 422, "VALIDATION_ERROR",
       "prompt: should be a string"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","width":"big"})",
       "application/json", 422, "VALIDATION_ERROR", "width"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","width":1e308})",
       "application/json", 422, "VALIDATION_ERROR", "width"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","steps":99999999999999999999})",
       "application/json", 422, "VALIDATION_ERROR", "steps"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","seed":-1})",
       "application/json", 422, "VALIDATION_ERROR", "seed"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","width":17})",
       "application/json", 422, "VALIDATION_ERROR", "17"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","batch":2})",
       "application/json", 422, "VALIDATION_ERROR", "one request per"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","colour":"red"})",
       "application/json", 422, "VALIDATION_ERROR", "colour"},
      // The fields it lists are the parser's, batch included.
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","colour":"red"})",
       "application/json", 422, "VALIDATION_ERROR",
       "(model, tiny, images, prompt, negative_prompt, width, height, steps, "
       "guidance, seed, batch)"},
      // The schema's ranges, lower bounds included; null is not a default.
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","width":0})",
       "application/json", 422, "VALIDATION_ERROR",
       "width: should be a whole number from 16 to 16384, not 0"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","steps":0})",
       "application/json", 422, "VALIDATION_ERROR",
       "steps: should be a whole number from 1 to 1000, not 0"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","height":null})",
       "application/json", 422, "VALIDATION_ERROR",
       "height: should be a whole number from 16 to 16384, not null (leave"},
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","guidance":-1})",
       "application/json", 422, "VALIDATION_ERROR",
       "guidance: should be a number from 0 to 100, not -1"},
      // A number JSON's doubles cannot hold: named, not an internal error.
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"x","width":1e400})",
       "application/json", 422, "VALIDATION_ERROR", "width: "},
      // Refused before it is queued, not after a generation.
      {"POST", "/api/generate",
       R"({"model":"z-image-turbo","prompt":"a\u0000b"})", "application/json",
       422, "VALIDATION_ERROR", "prompt: has a NUL byte at byte 1"},
      {"POST", "/api/generate", R"({"model":"no-such-model","prompt":"x"})",
       "application/json", 404, "MODEL_NOT_FOUND", "no-such-model"},
      {"POST", "/api/generate", fox(1), "text/plain", 415,
       "UNSUPPORTED_MEDIA_TYPE", "application/json"},
      {"GET", "/api/generate", "", "", 405, "METHOD_NOT_ALLOWED", "POST"},
      {"DELETE", "/api/status", "", "", 405, "METHOD_NOT_ALLOWED", "GET"},
      {"GET", "/api/nothing", "", "", 404, "NOT_FOUND", "/api/nothing"},
      {"POST", "/api/models/unload", R"({"model":7})", "application/json", 422,
       "VALIDATION_ERROR", "model"},
  };
  for (const auto& c : cases) {
    INFO(c.method << " " << c.path << " " << c.body.substr(0, 80));
    const auto r = client.request(c.method, c.path, c.body, c.type);
    CHECK(r.status == c.status);
    const Json body = json_of(r);
    CHECK(body["code"] == c.code);
    CHECK_THAT(body["error"].get<std::string>(), Catch::Contains(c.says));
  }
  CHECK(client.request("GET", "/health").status == 200);
  CHECK(server.alive());
  // A source image is refused by the size its header says, before it is
  // decoded: this one claims 16384x16384 (its pixels would cost 768 MiB).
  std::string header = "\x89PNG\r\n\x1a\n";
  header += std::string("\0\0\0\x0dIHDR", 8);
  header += std::string("\0\0\x40\0\0\0\x40\0\x08\x02\0\0\0", 13);
  const Json huge = {{"model", "qwen-image-edit-2511"},
                     {"prompt", "x"},
                     {"images", {mold::net::base64_encode(header)}}};
  const auto refused =
      client.request("POST", "/api/generate", huge.dump(), "application/json");
  CHECK(refused.status == 422);
  CHECK_THAT(json_of(refused)["error"].get<std::string>(),
             Catch::Contains("images[0]: a 16384x16384 image (268435456 "
                             "pixels); a source image may have at most "
                             "67108864"));
  // The access log's line of a refused request says why.
  CHECK_THAT(server.log(),
             Catch::Contains("\"error\":\"VALIDATION_ERROR: width: should be"));
}

TEST_CASE("mold serve: every field of the request schema is a JSON field",
          "[net][serve][schema]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  for (const mold::GenerateField& field : mold::generate_fields()) {
    const std::string name(field.name);
    INFO(name);
    Json body = {{"model", "z-image-turbo"}, {"prompt", "x"}};
    switch (field.kind) {
    case mold::FieldKind::whole:
      body[name] = std::int64_t(field.high) + 1;
      break;
    case mold::FieldKind::real:
      body[name] = field.high * 2;
      break;
    case mold::FieldKind::seed:
      body[name] = -1;
      break;
    case mold::FieldKind::text:
      body[name] = 5;
      break;
    }
    const auto r = client.request("POST", "/api/generate", body.dump(),
                                  "application/json");
    CHECK(r.status == 422);
    CHECK_THAT(json_of(r)["error"].get<std::string>(),
               Catch::StartsWith(name + ": should be"));
  }
}

TEST_CASE("mold serve: connections are sized from the open-file limit",
          "[net][serve]") {
  // 300 descriptors: 128 are kept for the models, the plugins and the log.
  ServerProcess server({"--tiny", "--max-connections", "1000"}, {},
                       {"prlimit", "--nofile=300"});
  CHECK_THAT(server.log(),
             Catch::Contains("--max-connections 1000 lowered to 172: the "
                             "open-file limit is 300"));
  CHECK(client_for(server).request("GET", "/health").status == 200);
}

TEST_CASE("mold serve: an API key, required off loopback", "[net][serve]") {
  SECTION("without a key, binding every interface is refused") {
    const auto r = run_mold({"serve", "--bind", "0.0.0.0", "--port", "0"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--token"));
    CHECK_THAT(r.err, Catch::Contains("MOLD_API_KEY"));
  }
  SECTION("with a key, only clients that send it are served") {
    ServerProcess server({"--tiny"}, {{"MOLD_API_KEY", "s3cret"}});
    HttpClient none = client_for(server);
    HttpClient wrong = client_for(server, "nope");
    HttpClient right = client_for(server, "s3cret");
    CHECK(none.request("GET", "/health").status == 200);  // probes need none
    const auto refused = none.request("GET", "/api/status");
    CHECK(refused.status == 401);
    CHECK(json_of(refused)["code"] == "UNAUTHORIZED");
    CHECK(wrong.request("GET", "/api/status").status == 401);
    CHECK(wrong.request("POST", "/api/generate", fox(1)).status == 401);
    CHECK(right.request("GET", "/api/status").status == 200);
    CHECK(right.request("GET", "/metrics").status == 200);
    CHECK(none.request("GET", "/api/status", {}, "", {{"X-Api-Key", "s3cret"}})
              .status == 200);
    // The scheme is case-insensitive.
    for (const char* scheme : {"Bearer", "bearer", "BEARER", "bEaReR"})
      CHECK(none.request("GET", "/api/status", {}, "",
                         {{"Authorization", std::string(scheme) + " s3cret"}})
                .status == 200);
  }
  SECTION("--bind localhost is the loopback") {
    ServerProcess server({"--tiny", "--bind", "localhost"});
    CHECK(client_for(server).request("GET", "/health").status == 200);
  }
}

TEST_CASE("mold serve: a request that can never fit is refused before it runs",
          "[net][serve][memory]") {
  // 8 MiB: the tiny text encoder alone has 18.65 MiB of float32 weights.
  // The limit is the whole device: it will never fit (422, no retry).
  ServerProcess server({"--tiny", "--cpu-memory-limit", "8 MiB"});
  HttpClient client = client_for(server);
  const auto r = client.request("POST", "/api/generate", fox(1));
  CHECK(r.status == 422);
  const Json body = json_of(r);
  CHECK(body["code"] == "NEVER_FITS");
  CHECK_THAT(body["error"].get<std::string>(), Catch::Contains("text_encode"));
  CHECK_THAT(body["error"].get<std::string>(), Catch::Contains("8.00 MiB"));
  CHECK_THAT(body["error"].get<std::string>(),
             Catch::Contains("will never fit"));
  CHECK(body["oom"]["admission"]["available_bytes"].get<std::uint64_t>() <=
        8u << 20);
  CHECK(body["oom"]["admission"]["retry"] == false);
  CHECK(body["oom"]["admission"]["verdict"] == "never fits");
  // Nothing ran: no phase of it is recorded, nothing was loaded.
  const Json memory = json_of(client.request("GET", "/api/memory"));
  CHECK(memory["last_request"].is_null());
  CHECK(memory["now"]["allocated"] == 0);
  CHECK_THAT(client.request("GET", "/metrics").body,
             Catch::Contains("mold_rejections_total{code=\"NEVER_FITS\"} 1"));
  // The stream route answers the same with a real status, no stream.
  const Streamed s = stream(client, fox(2));
  CHECK(s.status == 422);
  CHECK_THAT(s.body, Catch::Contains("NEVER_FITS"));
}

TEST_CASE(
    "mold serve: a decode whose whole does not fit runs bounded, as mold run "
    "does, its peak resident set within the plan",
    "[net][serve][memory]") {
#if defined(MOLD_TEST_SANITIZED)
  WARN("not judged under a sanitizer: the resident set is the sanitizer's");
  return;
#endif
  // 1.5 GiB: the tiny VAE's whole decode of 1024x1024 does not fit (its
  // attention's scores alone take 2.2 GB); the recovery ladder's bounded rung
  // (the scores in chunks of 64 MiB) does. The server plans it so, gives the
  // phase that rung's memory, and the ladder runs it.
  ServerProcess server({"--tiny", "--cpu-memory-limit", "1536 MiB"});
  HttpClient client = client_for(server);
  const long long before = server.rss();
  REQUIRE(before > 0);
  const Streamed s = stream(client, Json{{"model", "z-image-turbo"},
                                         {"prompt", "a red fox in the snow"},
                                         {"width", 1024},
                                         {"height", 1024},
                                         {"steps", 1},
                                         {"seed", 3}}
                                        .dump());
  INFO(server.log());
  REQUIRE(s.status == 200);
  REQUIRE(s.events.back().event == "complete");
  // The plan it ran: each phase's estimate and the weights resident then.
  long long planned = 0;
  Json decode;
  for (const auto& e : s.events) {
    if (e.event != "progress") continue;
    const Json data = Json::parse(e.data);
    if (data["kind"] != "phase" || data["event"]["status"] != "done") continue;
    const Json& ev = data["event"];
    long long resident = 0;
    for (const auto& c : ev["residency"])
      if (c["residency"] == "device") resident += c["bytes"].get<long long>();
    planned =
        std::max(planned, ev["estimate_bytes"].get<long long>() + resident);
    if (ev["phase"] == "vae_decode") decode = ev;
  }
  REQUIRE_FALSE(decode.is_null());
  CHECK(decode["workload"]["attention_bound"] == 64 << 20);
  CHECK_THAT(decode["detail"].get<std::string>(),
             Catch::Contains("vae bounded"));
  // The whole process, libtorch's and OpenBLAS's own buffers included,
  // stays within the plan plus 128 MiB the cpu backend does not track.
  const long long peak = server.peak_rss();
  INFO("resident before " << before << ", peak " << peak << ", planned "
                          << planned);
  CHECK(peak - before <= planned + (128ll << 20));
}

TEST_CASE("mold serve: a full queue answers 503 with Retry-After",
          "[net][serve][queue]") {
  const SlowGate gate;
  ServerProcess server(
      {"--tiny", "--queue", "1", "--plugin-dir", kFaultyPluginDir}, gate.env());
  HttpClient client = client_for(server);
  int first = 0;
  std::thread running([&] {
    HttpClient c = client_for(server);
    first = c.request("POST", "/api/generate", slow(1)).status;
  });
  wait_busy(client);
  // One waits (its stream says where it stands), the next is refused.
  Streamed waiting;
  std::thread queued([&] {
    HttpClient c = client_for(server);
    waiting = stream(c, slow(2));
  });
  wait_queued(client, 1);
  const auto full = client.request("POST", "/api/generate", slow(3));
  CHECK(full.status == 503);
  CHECK(json_of(full)["code"] == "QUEUE_FULL");
  CHECK(std::stoi(full.header("Retry-After")) >= 1);
  CHECK_THAT(json_of(full)["error"].get<std::string>(),
             Catch::Contains("--queue 1"));
  gate.open();
  running.join();
  queued.join();
  CHECK(first == 200);
  REQUIRE(waiting.status == 200);
  REQUIRE_FALSE(waiting.events.empty());
  const Json position = Json::parse(waiting.events.front().data);
  CHECK(position["kind"] == "queue");
  CHECK(position["position"] == 1);
  CHECK(waiting.events.back().event == "complete");
  CHECK_THAT(client.request("GET", "/metrics").body,
             Catch::Contains("mold_rejections_total{code=\"QUEUE_FULL\"} 1"));
}

TEST_CASE("mold serve: a long phase keeps its stream alive with heartbeats",
          "[net][serve][stream]") {
  // The denoise waits for the gate, opened once a heartbeat came: the first is
  // due after 1 s of silence (--heartbeat 1), so this test takes that second.
  // The client hands each piece over as it arrives and each restarts its read
  // timeout: one that waited for 64 KiB (or the end) would time out at 5 s.
  const SlowGate gate;
  ServerProcess server(
      {"--tiny", "--heartbeat", "1", "--plugin-dir", kFaultyPluginDir},
      gate.env());
  mold::net::ClientOptions options;
  options.read_timeout = std::chrono::seconds(5);
  HttpClient client(mold::net::parse_server_address(server.host(), "test"),
                    options);
  std::string encoding, text;
  client.stream(
      "POST", "/api/generate/stream", slow(1), "application/json",
      [&](const ClientResponse& head) {
        encoding = head.header("Transfer-Encoding");
      },
      [&](std::string_view data) {
        text.append(data);
        if (text.find(": keep-alive\n\n") != std::string::npos) gate.open();
      });
  CHECK(encoding == "chunked");
  CHECK_THAT(text, Catch::Contains(": keep-alive\n\n"));
  CHECK_THAT(text, Catch::Contains("event: complete"));
}

TEST_CASE("mold serve: 200 requests at once, every one answered, memory back",
          "[net][serve][load]") {
  ServerProcess server({"--tiny", "--queue", "8", "--quiet"});
  HttpClient warm = client_for(server);
  // Warm up: the model loads once and stays resident; measure after it.
  for (int i = 0; i < 3; ++i)
    REQUIRE(warm.request("POST", "/api/generate", fox(i)).status == 200);
  wait_idle(warm);
  const long long baseline = server.rss();
  REQUIRE(baseline > 0);
  std::atomic<int> answered{0}, images{0}, full{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 200; ++i)
    clients.emplace_back([&, i] {
      HttpClient client = client_for(server);
      try {
        int status = 0;
        bool image = false;
        if (i % 4 == 0) {
          status = client.request("GET", "/api/status").status;
        } else if (i % 4 == 1) {
          const Streamed s = stream(client, fox(i));
          status = s.status;
          image = !s.events.empty() && s.events.back().event == "complete";
        } else {
          status = client.request("POST", "/api/generate", fox(i)).status;
          image = status == 200;
        }
        if (status == 200 || status == 503) ++answered;
        if (image) ++images;
        if (status == 503) ++full;
      } catch (const std::exception&) {
      }
    });
  for (auto& t : clients) t.join();
  CHECK(answered == 200);
  CHECK(images >= 9);
  CHECK(full > 0);
  CHECK(server.alive());
  REQUIRE(warm.request("GET", "/health").status == 200);
  wait_idle(warm);
  const long long after = server.rss();
  INFO("baseline " << baseline << " after " << after);
#if !defined(MOLD_TEST_SANITIZED)
  CHECK(double(after) <= 1.05 * double(baseline));
#endif
}

TEST_CASE("mold serve: randomly mutated generate requests never bring it down",
          "[net][serve][hostile]") {
  ServerProcess server({"--tiny", "--quiet", "--max-body", "64 KiB"});
  HttpClient client = client_for(server);
  const std::string valid = Json{
      {"model", "z-image-turbo"},
      {"prompt", "a fox"},
      {"width", 32},
      {"height", 32},
      {"steps", 1},
      {"guidance", 0.5},
      {"seed", 3}}.dump();
  std::mt19937_64 random(17);
  const int cases = mutation_cases(150);
  int images = 0;
  for (int i = 0; i < cases; ++i) {
    const std::string body = mutate(valid, random);
    INFO(body);
    const auto r = client.request("POST", "/api/generate", body);
    CHECK((r.status == 200 || r.status == 400 || r.status == 404 ||
           r.status == 422 || r.status == 503));
    if (r.status == 200)
      ++images;
    else
      CHECK(Json::parse(r.body).contains("code"));
  }
  CHECK(server.alive());
  CHECK(client.request("POST", "/api/generate", valid).status == 200);
  INFO(images << " of " << cases << " mutated requests made an image");
}

TEST_CASE("mold serve: oversized, slow and broken clients",
          "[net][serve][hostile]") {
  ServerProcess server(
      {"--tiny", "--max-body", "4 KiB", "--read-timeout", "1"});
  const std::string big =
      "POST /api/generate HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json\r\nContent-Length: "
      "100000\r\n\r\n" +
      std::string(100000, ' ');
  const std::string answer = raw_exchange(server.port(), big);
  CHECK(status_of_response(answer) == 413);
  CHECK_THAT(answer, Catch::Contains("--max-body"));
  const std::string slow = raw_exchange(
      server.port(),
      "GET /api/status HTTP/1.1\r\nHost: t\r\nX-A: " + std::string(100, 'a') +
          "\r\n\r\n",
      8000, 80, 40);
  CHECK(status_of_response(slow) == 408);
  // A client that sends a generate and leaves at once: the server goes on.
  raw_exchange(server.port(),
               "POST /api/generate HTTP/1.1\r\nHost: t\r\nContent-Type: "
               "application/json\r\nContent-Length: " +
                   std::to_string(fox(1).size()) + "\r\n\r\n" + fox(1),
               1);
  HttpClient client = client_for(server);
  CHECK(client.request("POST", "/api/generate", fox(2)).status == 200);
  const std::string huge_header =
      raw_exchange(server.port(), "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " +
                                      std::string(64 << 10, 'x') + "\r\n\r\n");
  CHECK(status_of_response(huge_header) == 431);
  CHECK(server.alive());
}

TEST_CASE("mold serve: unloading gives the memory back", "[net][serve]") {
  ServerProcess server({"--tiny"});
  HttpClient client = client_for(server);
  REQUIRE(client.request("POST", "/api/generate", fox(1)).status == 200);
  const auto before = json_of(client.request("GET", "/api/memory"));
  CHECK(before["now"]["allocated"].get<std::uint64_t>() > 20u << 20);
  const auto unknown =
      client.request("POST", "/api/models/unload", R"({"model":"nope"})");
  CHECK(unknown.status == 404);
  const Json done = json_of(client.request("POST", "/api/models/unload",
                                           R"({"model":"z-image-turbo"})"));
  REQUIRE(done["unloaded"].size() == 1);
  CHECK(done["freed_bytes"].get<std::uint64_t>() > 20u << 20);
  const Json after = json_of(client.request("GET", "/api/status"));
  CHECK(after["models"].empty());
  CHECK(after["memory"]["allocated"] == 0);
  // It loads again on the next request.
  CHECK(client.request("POST", "/api/generate", fox(1)).status == 200);
  CHECK(json_of(client.request("POST", "/api/models/unload", ""))["unloaded"]
            .size() == 1);
}

TEST_CASE(
    "mold serve: SIGTERM finishes the running and queued images, "
    "then exits 0",
    "[net][serve]") {
  const SlowGate gate;
  ServerProcess server({"--tiny", "--quiet", "--plugin-dir", kFaultyPluginDir},
                       gate.env());
  HttpClient client = client_for(server);
  int first = 0, second = 0;
  std::thread a([&] {
    HttpClient c = client_for(server);
    first = c.request("POST", "/api/generate", slow(1)).status;
  });
  wait_busy(client);
  std::thread b([&] {
    HttpClient c = client_for(server);
    second = c.request("POST", "/api/generate", slow(2)).status;
  });
  wait_queued(client, 1);
  // SIGTERM while one job runs and one waits; both go on once the gate opens.
  kill(server.pid(), SIGTERM);
  wait_until(
      [&] {
        return server.log().find("finishing queued work") != std::string::npos;
      },
      "the server to start draining");
  gate.open();
  CHECK(server.stop(120) == 0);
  a.join();
  b.join();
  CHECK(first == 200);
  CHECK(second == 200);
  CHECK_THAT(server.log(), Catch::Contains("finishing queued work"));
}
