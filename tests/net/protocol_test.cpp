// The API's wire formats: server-sent events, base64, MOLD_HOST addresses,
// error bodies, out-of-memory reports and phase events, read back as written
// and refused by name when malformed.

#include <catch2/catch.hpp>
#include <mold/base/error.hpp>
#include <mold/net/api_error.hpp>
#include <mold/net/base64.hpp>
#include <mold/net/oom_json.hpp>
#include <mold/net/server_address.hpp>
#include <mold/net/sse.hpp>
#include <mold/runtime/event_json.hpp>
#include <random>

#include "support/mutations.hpp"

using namespace mold;
using namespace mold::net;

TEST_CASE("events are read back whatever the pieces they arrive in",
          "[net][sse]") {
  const std::string stream = format_sse("progress", "{\"a\":1}") +
                             sse_comment("keep-alive") +
                             format_sse("complete", "line one\nline two") +
                             "event: error\r\ndata: x\r\n\r\n";
  for (std::size_t piece :
       {std::size_t(1), std::size_t(3), std::size_t(7), stream.size()}) {
    SseParser parser;
    std::vector<SseEvent> events;
    for (std::size_t i = 0; i < stream.size(); i += piece)
      parser.feed(std::string_view(stream).substr(i, piece),
                  [&](const SseEvent& e) { events.push_back(e); });
    REQUIRE(events.size() == 3);
    CHECK(events[0].event == "progress");
    CHECK(events[0].data == "{\"a\":1}");
    CHECK(events[1].event == "complete");
    CHECK(events[1].data == "line one\nline two");
    CHECK(events[2].event == "error");
    CHECK(events[2].data == "x");
  }
}

TEST_CASE("an event larger than the limit is refused", "[net][sse]") {
  SseParser parser(64);
  CHECK_THROWS_AS(
      parser.feed("data: " + std::string(100, 'x'), [](const SseEvent&) {}),
      ParseError);
}

TEST_CASE("base64 round-trips any bytes and refuses what is not base64",
          "[net][base64]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  std::mt19937 random(3);
  for (int n = 0; n < 300; ++n) {
    std::string bytes(std::size_t(n), '\0');
    for (char& c : bytes) c = char(random());
    CHECK(base64_decode(base64_encode(bytes)) == bytes);
  }
  for (const char* bad :
       {"Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "=Zg=", "Zm 9v"})
    CHECK_FALSE(base64_decode(bad));
}

TEST_CASE("MOLD_HOST: a bare host means port 7680", "[net][address]") {
  CHECK(parse_server_address("gpu-box", "MOLD_HOST").display() ==
        "gpu-box:7680");
  CHECK(parse_server_address("gpu-box:8000", "MOLD_HOST").port == 8000);
  const auto url = parse_server_address("http://gpu-box:81/mold/", "MOLD_HOST");
  CHECK(url.host == "gpu-box");
  CHECK(url.port == 81);
  CHECK(url.base_path == "/mold");
  CHECK(parse_server_address("[::1]:9", "MOLD_HOST").display() == "[::1]:9");
  CHECK(parse_server_address(" 10.0.0.2 ", "MOLD_HOST").host == "10.0.0.2");
}

TEST_CASE("MOLD_HOST: what cannot be an address is named", "[net][address]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"https://gpu-box", "https"},
      {"ftp://gpu-box", "scheme"},
      {"gpu-box:0", "1 to 65535"},
      {"gpu-box:65536", "1 to 65535"},
      {"gpu-box:99999999999999999999", "1 to 65535"},
      {"gpu-box:80a", "not a number"},
      {"gpu-box:", "without a port"},
      {"::1", "brackets"},
      {"[::1", "]"},
      {"user@gpu-box", "cannot be in a host name"},
      {"gpu box", "cannot be in a host name"},
      {":7680", "no host"},
      {"[zz]:1", "\"zz\" in brackets is not an IPv6 address"},
      {"[]:1", "is not an IPv6 address"},
      {"http://h:80/../../x", "the path \"/../../x\" has a '..' segment"},
      {"http://h/a/./b", "has a '.' segment"},
      {"http://h/a b", "cannot be in the path"},
      {"gpu_box!", "'!' cannot be in a host name"},
  };
  for (const auto& [text, why] : cases) {
    INFO(text);
    try {
      parse_server_address(text, "MOLD_HOST");
      FAIL("accepted");
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Catch::Contains("MOLD_HOST"));
      CHECK_THAT(e.what(), Catch::Contains(why));
    }
  }
}

TEST_CASE("every error code has its status", "[net][errors]") {
  CHECK(status_of(codes::kValidationError) == 422);
  CHECK(status_of(codes::kModelNotFound) == 404);
  CHECK(status_of(codes::kInsufficientMemory) == 503);
  CHECK(status_of(codes::kNeverFits) == 422);
  CHECK(status_of(codes::kQueueFull) == 503);
  CHECK(status_of(codes::kUnauthorized) == 401);
  CHECK(status_of(codes::kPayloadTooLarge) == 413);
  CHECK(status_of(codes::kInferenceError) == 500);
  CHECK(status_of("SOMETHING_ELSE") == 500);
  const HttpResponse r = error_response(codes::kQueueFull, "full \xff",
                                        std::nullopt, {{"Retry-After", "3"}});
  CHECK(r.status == 503);
  const auto body = nlohmann::json::parse(r.body);
  CHECK(body["code"] == "QUEUE_FULL");
  CHECK(body["error"].get<std::string>().find("full") == 0);
}

TEST_CASE("an out-of-memory report crosses the wire whole", "[net][oom]") {
  OomReport r;
  r.backend = "cuda";
  r.device = "GPU 0";
  r.classifier = "cuda";
  r.requested = 20 * kMiB;
  r.capacity = 48 * kGiB;
  r.free = 3 * kMiB;
  r.fragmentation = true;
  r.message = "CUDA out of memory. Tried to allocate 20.00 MiB";
  r.raw_message = r.message + "\nException raised from ...";
  r.origin.kind = Origin::Kind::remote;
  r.origin.host = "gpu-box:7680";
  r.origin.backend = "cuda";
  r.origin.device_name = "NVIDIA H200";
  const auto json = oom_json(r, "the label", {"hint one", "hint two"},
                             "c10::OutOfMemoryError");
  const ReceivedOom back = oom_from_json(nlohmann::json::parse(json.dump()));
  CHECK(back.report.backend == "cuda");
  CHECK(back.report.requested == r.requested);
  CHECK(back.report.capacity == r.capacity);
  CHECK(back.report.free == r.free);
  CHECK_FALSE(back.report.allocated);
  CHECK(back.report.fragmentation);
  CHECK(back.report.origin.kind == Origin::Kind::remote);
  CHECK(back.report.origin.device_name == "NVIDIA H200");
  CHECK(back.hints == std::vector<std::string>{"hint one", "hint two"});
  CHECK(back.label == "the label");
  CHECK(back.exception_kind == "c10::OutOfMemoryError");
  for (const char* bad :
       {R"({"requested": -1})", R"({"requested": "20 MiB"})",
        R"({"hints": "x"})", R"({"hints": [1]})", R"({"origin": 3})",
        R"({"fragmentation": "yes"})", "[]"}) {
    INFO(bad);
    CHECK_THROWS_AS(oom_from_json(nlohmann::json::parse(bad)), ParseError);
  }
}

TEST_CASE("a phase event is read back as it was written", "[net][events]") {
  PhaseEvent e;
  e.image = 1;
  e.images = 3;
  e.phase = "denoise";
  e.component = "transformer";
  e.stage = PhaseStage::step;
  e.step = 4;
  e.steps = 8;
  e.seconds = 1.5;
  e.workload.family = "zimage";
  e.workload.op = "denoise";
  e.workload.width = 512;
  e.workload.tokens = 77;
  e.workload.quantized = true;
  e.estimate.bytes = 12345;
  e.estimate.source = "calibration.toml";
  e.before.allocated = 100;
  e.after.peak_allocated = 200;
  e.after.ooms = 2;
  e.parked = {"text_encoder"};
  CacheEntryState entry;
  entry.name = "vae";
  entry.bytes = 99;
  entry.residency = Residency::parked;
  entry.loads = 2;
  e.residency = {entry};
  e.detail = "vae whole";
  const PhaseEvent back = parse_phase_event_json(phase_event_json(e));
  CHECK(back.image == 1);
  CHECK(back.images == 3);
  CHECK(back.phase == "denoise");
  CHECK(back.stage == PhaseStage::step);
  CHECK(back.step == 4);
  CHECK(back.steps == 8);
  CHECK(back.seconds == 1.5);
  CHECK(back.workload.width == 512);
  CHECK(back.workload.tokens == 77);
  CHECK(back.workload.quantized);
  CHECK(back.estimate.bytes == 12345);
  CHECK(back.before.allocated == 100);
  CHECK(back.after.peak_allocated == 200);
  CHECK(back.after.ooms == 2);
  CHECK(back.parked == e.parked);
  REQUIRE(back.residency.size() == 1);
  CHECK(back.residency[0].residency == Residency::parked);
  CHECK(back.residency[0].loads == 2);
  CHECK(back.detail == "vae whole");
}

TEST_CASE("a malformed phase event is refused naming the field",
          "[net][events]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "not JSON"},
      {"[]", "object"},
      {R"({"phase":"x","status":"start"})", "image"},
      {R"({"image":0,"status":"start"})", "phase"},
      {R"({"image":0,"phase":"x","status":"begun"})", "status"},
      {R"({"image":-1,"phase":"x","status":"start"})", "image"},
      {R"({"image":0,"phase":"x","status":"start","after":{"allocated":-5}})",
       "after.allocated"},
      {R"({"image":0,"phase":"x","status":"start","residency":[{"component":"a","residency":"gone"}]})",
       "residency[0].residency"},
      {R"({"image":99999999999,"phase":"x","status":"start"})", "image"},
      {R"({"image":0,"phase":"x","status":"start","workload":{"quantized":1}})",
       "workload.quantized"},
  };
  for (const auto& [text, field] : cases) {
    INFO(text);
    try {
      parse_phase_event_json(text);
      FAIL("accepted");
    } catch (const ParseError& e) {
      CHECK_THAT(e.what(), Catch::Contains(field));
    }
  }
}

TEST_CASE("mutated phase events never crash the reader", "[net][events]") {
  PhaseEvent e;
  e.phase = "vae_decode";
  e.parked = {"a", "b"};
  const std::string text = phase_event_json(e);
  std::mt19937_64 random(11);
  for (int i = 0; i < mold::test::mutation_cases(2000); ++i) {
    const std::string mutated = mold::test::mutate(text, random);
    try {
      parse_phase_event_json(mutated);
    } catch (const ParseError&) {
    }
  }
}
