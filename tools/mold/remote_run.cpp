#include "remote_run.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/base/text.hpp>
#include <mold/base/untrusted_json.hpp>
#include <mold/net/api_error.hpp>
#include <mold/net/base64.hpp>
#include <mold/net/generate_json.hpp>
#include <mold/net/http_client.hpp>
#include <mold/net/oom_json.hpp>
#include <mold/net/sse.hpp>
#include <mold/plugin/oom_advice.hpp>
#include <mold/runtime/event_json.hpp>
#include <mold/runtime/json_recorder.hpp>
#include <mold/runtime/progress_printer.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/readable_error.hpp"
#include "output_path.hpp"

namespace mold_cli {

namespace net = mold::net;
namespace codes = mold::net::codes;
using Json = nlohmann::json;

std::string client_platform() {
  if (const char* forced = std::getenv("MOLD_CLIENT_PLATFORM");
      forced && *forced)
    return forced;
#if defined(__APPLE__)
  return "macos";
#elif defined(_WIN32)
  return "windows";
#else
  return "linux";
#endif
}

namespace {

/// What the server said about itself (GET /api/status).
struct ServerInfo {
  std::string backend = "unknown";
  std::string device;
  std::string version;
};

/// The server refused or failed an image: its code and message, and the
/// retry delay it asked for.
struct ServerError {
  int status = 0;
  std::string code;
  std::string message;
  Json oom;  ///< null when none
  int retry_after = 0;
};

/// A stream that should be tried again (queue full, shutting down).
struct Retry {
  ServerError error;
};

ServerError error_from(int status, const std::string& body,
                       const std::string& retry_after) {
  ServerError e;
  e.status = status;
  const Json j = mold::parse_untrusted_json(body);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    e.message = j["error"].get<std::string>();
    if (j.contains("code") && j["code"].is_string())
      e.code = j["code"].get<std::string>();
    if (j.contains("oom") && j["oom"].is_object()) e.oom = j["oom"];
  } else {
    // Not mold's answer (a proxy's error page): its first line, escaped.
    std::string text = body.substr(0, 300);
    e.message =
        fmt::format("HTTP {} {}{}", status, net::status_reason(status),
                    text.empty() ? "" : ": " + mold::escape_control(text));
  }
  if (!retry_after.empty()) {
    char* end = nullptr;
    const long seconds = std::strtol(retry_after.c_str(), &end, 10);
    if (end && *end == '\0' && seconds >= 0) e.retry_after = int(seconds);
  }
  return e;
}

bool retryable(const ServerError& e) {
  return e.code == codes::kQueueFull || e.code == codes::kShuttingDown ||
         e.code == codes::kTooManyConnections;
}

class RemoteRunner {
 public:
  explicit RemoteRunner(const RemoteRun& run)
      : run_(run), client_(run.server, options(run)), progress_(std::cerr) {}

  int go() {
    info_ = fetch_info();
    const int images = run_.generate.batch;
    std::cerr << fmt::format("mold run: {} image{} of {} on {} ({}, {})\n",
                             images, images == 1 ? "" : "s", run_.model_spec,
                             run_.server.display(), info_.backend,
                             info_.device);
    for (int i = 0; i < images; ++i) image(i, images);
    if (run_.json) {
      recorder_.set_field("model", Json(model_).dump());
      recorder_.set_field("variant", Json(variant_).dump());
      recorder_.set_field("seeded_weights", seeded_ ? "true" : "false");
      recorder_.set_field("weights", Json(weights_).dump());
      recorder_.set_field("backend", Json(info_.backend).dump());
      recorder_.set_field("server", Json(run_.server.display()).dump());
      std::cout << recorder_.dump() << "\n";
    }
    return 0;
  }

 private:
  static net::ClientOptions options(const RemoteRun& run) {
    net::ClientOptions o;
    o.api_key = run.api_key;
    o.user_agent = fmt::format("mold/{} ({})", MOLD_VERSION, client_platform());
    o.read_timeout = std::chrono::seconds(600);
    return o;
  }

  [[noreturn]] void unreachable(const net::ConnectionError& e) const {
    throw mold::Error(fmt::format(
        "{} ({}).\n  Is `mold serve` running there? Check {}, or add --local "
        "to run on this machine.",
        e.what(), run_.server_source,
        run_.server_source.rfind("--host", 0) == 0 ? "--host" : "MOLD_HOST"));
  }

  ServerInfo fetch_info() {
    net::ClientResponse r;
    try {
      r = client_.request("GET", "/api/status");
    } catch (const net::ConnectionError& e) {
      unreachable(e);
    }
    if (r.status != 200) fail(error_from(r.status, r.body, ""), -1, 0);
    ServerInfo info;
    const Json j = mold::parse_untrusted_json(r.body);
    if (!j.is_object() || !j.contains("backend"))
      throw mold::Error(fmt::format(
          "the server at {} ({}) did not answer GET /api/status as a mold "
          "server does: is it one?",
          run_.server.display(), run_.server_source));
    info.backend = j.value("backend", "unknown");
    info.device = j.value("device", "");
    info.version = j.value("version", "");
    return info;
  }

  Json body(int i) const {
    Json b = mold::net::generate_fields_json(run_.generate, i);
    b["model"] = run_.model_spec;
    if (run_.tiny) b["tiny"] = true;
    if (!run_.images_png.empty()) {
      Json images = Json::array();
      for (const std::string& png : run_.images_png)
        images.push_back(mold::net::base64_encode(png));
      b["images"] = std::move(images);
    }
    return b;
  }

  void image(int i, int images) {
    for (int attempt = 0;; ++attempt) {
      try {
        stream_one(i, images);
        return;
      } catch (const Retry& retry) {
        if (attempt >= 5) fail(retry.error, i, images);
        const int wait = std::max(1, std::min(30, retry.error.retry_after));
        std::cerr << fmt::format(
            "[{}/{}] the server is busy ({}); retrying in {} s\n", i + 1,
            images, retry.error.code, wait);
        std::this_thread::sleep_for(std::chrono::seconds(wait));
      }
    }
  }

  void stream_one(int i, int images) {
    const std::string request = body(i).dump();
    int status = 0;
    std::string error_body, retry_after;
    bool completed = false;
    std::optional<ServerError> stream_error;
    net::SseParser parser;
    auto on_event = [&](const net::SseEvent& event) {
      const Json data = mold::parse_untrusted_json(event.data);
      if (event.event == "progress" && data.is_object()) {
        progress(data, i, images);
      } else if (event.event == "complete" && data.is_object()) {
        complete(data, i, images);
        completed = true;
      } else if (event.event == "error") {
        stream_error = error_from(500, event.data, "");
      }
    };
    try {
      client_.stream(
          "POST", "/api/generate/stream", request, "application/json",
          [&](const net::ClientResponse& head) {
            status = head.status;
            retry_after = head.header("Retry-After");
          },
          [&](std::string_view data) {
            if (status != 200) {
              if (error_body.size() < (1 << 20)) error_body.append(data);
              return;
            }
            parser.feed(data, on_event);
          });
    } catch (const net::ConnectionError& e) {
      if (completed) return;  // the image came; only the goodbye failed
      unreachable(e);
    }
    if (status != 200) {
      ServerError e = error_from(status, error_body, retry_after);
      if (retryable(e)) throw Retry{e};
      fail(e, i, images);
    }
    if (stream_error) {
      if (retryable(*stream_error)) throw Retry{*stream_error};
      fail(*stream_error, i, images);
    }
    if (!completed)
      throw mold::Error(fmt::format(
          "the server at {} ended the stream of image {} of {} before the "
          "image was done (did it restart?)",
          run_.server.display(), i + 1, images));
  }

  void progress(const Json& data, int i, int images) {
    const std::string kind = data.value("kind", "");
    if (kind == "queue") {
      std::cerr << fmt::format("[{}/{}] queued on the server: position {}\n",
                               i + 1, images, data.value("position", 0));
    } else if (kind == "phase" && data.contains("event")) {
      mold::PhaseEvent e;
      try {
        e = mold::parse_phase_event_json(data["event"].dump());
      } catch (const mold::ParseError& error) {
        throw mold::Error(fmt::format(
            "the server at {} sent a progress event of image {} that this "
            "client cannot read ({}): is it a mold server of this version "
            "({})?",
            run_.server.display(), i + 1, error.what(), MOLD_VERSION));
      }
      e.image = i;
      e.images = images;
      if (i == 0 && e.stage == mold::PhaseStage::done)
        first_image_.push_back(e);
      progress_.on_phase(e);
      if (run_.json) recorder_.on_phase(e);
    }
  }

  void complete(const Json& data, int i, int images) {
    const auto png =
        net::base64_decode(data.value("png_base64", std::string()));
    if (!png || png->size() < 8)
      throw mold::Error(fmt::format(
          "the server at {} sent image {} of {} without a readable PNG",
          run_.server.display(), i + 1, images));
    model_ = data.value("model", run_.model_spec);
    variant_ = data.value("variant", "");
    weights_ = data.value("weights", "");
    seeded_ = data.value("seeded_weights", false);
    mold::ImageRecord record;
    record.image = i;
    record.images = images;
    record.seed = data.value("seed", run_.generate.seed + std::uint64_t(i));
    record.width = data.value("width", 0);
    record.height = data.value("height", 0);
    record.seconds = data.value("seconds", 0.0);
    record.path = choose_output_path(run_.output, model_, record.seed);
    mold::write_file_atomically(record.path, "PNG", [&](std::ostream& out) {
      out.write(png->data(), std::streamsize(png->size()));
    });
    progress_.on_image(record);
    if (run_.json) recorder_.on_image(record);
  }

  [[noreturn]] void fail(const ServerError& e, int i, int images) const {
    const std::string where =
        fmt::format("the server at {}", run_.server.display());
    if (!e.oom.is_null() && e.oom.contains("label")) {
      net::ReceivedOom received = net::oom_from_json(e.oom);
      mold::OomReport& report = received.report;
      // Labelled by where it happened: this server, as this client names it,
      // with the server's backend and device; never this client's platform.
      report.origin.kind = mold::Origin::Kind::remote;
      report.origin.host = run_.server.display();
      if (report.origin.backend.empty()) report.origin.backend = info_.backend;
      if (report.origin.device_name.empty())
        report.origin.device_name = info_.device;
      std::vector<std::string> hints = received.hints;
      if (i > 0)
        hints.insert(
            hints.begin(),
            fmt::format(
                "image {} of --batch {} ran out on {} where the {} before it "
                "fit: memory the server kept between requests grew; profile "
                "it with `molddiag leak --remote {}`, and lower --batch or "
                "unload the models between batches (POST /api/models/unload) "
                "meanwhile{}",
                i + 1, images, run_.server.display(),
                i == 1 ? "image" : fmt::format("{} images", i),
                run_.server.display(), first_image_numbers()));
      throw mold::Error(mold::tools::oom_text(report, hints));
    }
    if (i < 0)
      throw mold::Error(fmt::format("{} ({}) refused GET /api/status: {}{}",
                                    where, run_.server_source, e.message,
                                    e.code == codes::kUnauthorized
                                        ? "\n  Set MOLD_API_KEY to the "
                                          "server's key."
                                        : ""));
    std::string text = fmt::format(
        "{} could not make image {} of {}{}: {}", where, i + 1, images,
        e.code.empty() ? "" : fmt::format(" ({})", e.code), e.message);
    if (e.code == codes::kUnauthorized)
      text += "\n  Set MOLD_API_KEY to the server's key.";
    if (e.code == codes::kModelNotFound)
      text += "\n  GET /api/models lists what the server has.";
    throw mold::Error(text);
  }

  const RemoteRun& run_;
  net::HttpClient client_;
  ServerInfo info_;
  mold::ProgressPrinter progress_;
  mold::JsonRecorder recorder_;
  /// The phases of image 1 as the server measured and estimated them: the
  /// numbers a later image's failure is told against.
  std::vector<mold::PhaseEvent> first_image_;

  /// "on image 1, denoise needed 1.2 GiB (estimated 1.3 GiB: learned ...)".
  std::string first_image_numbers() const {
    std::string text;
    for (const auto& e : first_image_) {
      const auto learned_part = e.estimate.source.find("); ");
      text += fmt::format(
          "{}{} needed {} (the server estimated {}{})",
          text.empty() ? "" : ", ", e.phase,
          mold::format_bytes(mold::working_peak(e.before, e.after)),
          mold::format_bytes(e.estimate.bytes),
          e.estimate.origin == "table" || e.estimate.origin.empty()
              ? std::string(" from its table")
              : ": " + (learned_part == std::string::npos
                            ? e.estimate.source
                            : e.estimate.source.substr(0, learned_part + 1)));
    }
    return text.empty() ? text : "; on image 1, " + text;
  }
  std::string model_, variant_, weights_;
  bool seeded_ = false;
};

}  // namespace

int run_remote(const RemoteRun& run) { return RemoteRunner(run).go(); }

}  // namespace mold_cli
