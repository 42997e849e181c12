// mold run against servers that are not what they should be: a fake server
// on loopback (mold's own HttpServer with a scripted handler) answers the
// real mold binary with garbage. Every case ends in a message that names the
// server, exit 1, no crash, no partial image.

#include <catch2/catch.hpp>
#include <filesystem>
#include <mold/net/http_server.hpp>
#include <mold/net/sse.hpp>
#include <string>

#include "support/process.hpp"

using namespace mold::net;
using namespace mold::test;
namespace fs = std::filesystem;

namespace {

const std::string kStatus =
    R"({"backend":"cpu","device":"fake","version":"0.1.0"})";

/// A server answering /api/status with `status` and the stream with
/// `stream` (raw event-stream text), or with `stream_status` and
/// `stream_body` when that is not 200.
class FakeServer {
 public:
  FakeServer(std::string status, std::string stream, int stream_status = 200,
             std::string stream_body = {}) {
    ServerOptions options;
    options.port = 0;
    server_ = std::make_unique<HttpServer>(
        options, [status, stream, stream_status, stream_body](
                     HttpRequest r, std::shared_ptr<ResponseChannel> c) {
          if (r.path == "/api/status") {
            HttpResponse resp;
            resp.body = status;
            c->send(resp);
          } else if (stream_status != 200) {
            HttpResponse resp;
            resp.status = stream_status;
            resp.content_type = "text/html";
            resp.body = stream_body;
            c->send(resp);
          } else {
            c->begin_stream(200, "text/event-stream", {});
            c->write(stream);
            c->end_stream();
          }
        });
    server_->start();
  }
  std::string host() const {
    return "127.0.0.1:" + std::to_string(server_->port());
  }

 private:
  std::unique_ptr<HttpServer> server_;
};

ProcessResult run_against(const FakeServer& server, const TempDir& out) {
  return run_mold({"run", "z-image-turbo", "a fox", "--tiny", "-o", out.path()},
                  {{"MOLD_HOST", server.host()}});
}

}  // namespace

TEST_CASE("mold run against servers that answer garbage",
          "[net][remote][hostile]") {
  struct Case {
    const char* name;
    std::string status, stream;
    int stream_status;
    std::string stream_body, says;
  };
  const std::vector<Case> cases = {
      {"status not JSON", "<html>hello</html>", "", 200, "",
       "did not answer GET /api/status as a mold server does"},
      {"status JSON without a backend", "{\"x\":1}", "", 200, "",
       "did not answer GET /api/status"},
      {"a progress event that is not an event", kStatus,
       format_sse("progress", R"({"kind":"phase","event":{"image":-4}})"), 200,
       "", "cannot read"},
      {"the stream ends without the image", kStatus,
       format_sse("progress", R"({"kind":"start","seed":0})"), 200, "",
       "before the image was done"},
      {"an image that is not base64", kStatus,
       format_sse("complete", R"({"seed":0,"png_base64":"!!!"})"), 200, "",
       "without a readable PNG"},
      {"an error event that is not JSON", kStatus,
       format_sse("error", "not json at all"), 200, "",
       "could not make image 1"},
      {"an error with a malformed oom", kStatus,
       format_sse(
           "error",
           R"({"error":"x","code":"INFERENCE_ERROR","oom":{"label":"L","requested":-3}})"),
       200, "", "oom report"},
      {"a proxy's error page", kStatus, "", 502,
       "<html><body>Bad Gateway</body></html>", "HTTP 502"},
      {"a 2 MiB event that never ends", kStatus,
       "data: " + std::string(2 << 20, 'x'), 200, "",
       "before the image was done"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    FakeServer server(c.status, c.stream, c.stream_status, c.stream_body);
    TempDir out;
    const auto r = run_against(server, out);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(server.host()));
    CHECK_THAT(r.err, Catch::Contains(c.says));
    CHECK_THAT(r.err, !Catch::Contains("terminate called"));
    CHECK(fs::is_empty(out.path()));
  }
}
