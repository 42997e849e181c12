#include "remote_driver.hpp"

#include <fmt/format.h>

#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/untrusted_json.hpp>
#include <mold/net/base64.hpp>
#include <mold/net/generate_json.hpp>
#include <mold/net/http_client.hpp>
#include <nlohmann/json.hpp>

#include "common/image_input.hpp"

namespace molddiag {

using Json = nlohmann::json;
namespace net = mold::net;

namespace {

class ServerAnswer {
 public:
  explicit ServerAnswer(std::string server) : server_(std::move(server)) {}

  [[noreturn]] void bad(const std::string& what) const {
    throw mold::Error(fmt::format(
        "the server at {} answered GET /api/memory with {}: is it a mold "
        "server of this version ({})?",
        server_, what, MOLD_VERSION));
  }

  const Json& member(const Json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) bad(fmt::format("no \"{}\"", key));
    return j[key];
  }

  mold::Bytes bytes(const Json& j, const char* key) const {
    const Json& v = member(j, key);
    if (!v.is_number_unsigned() &&
        !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      bad(fmt::format("\"{}\" not a byte count", key));
    return v.get<mold::Bytes>();
  }

  mold::MemoryStats memory(const Json& j) const {
    mold::MemoryStats stats;
    if (!j.is_object()) bad("memory that is not an object");
    for (const auto& field : mold::kMemoryStatsFields)
      if (j.contains(field.name)) stats.*field.member = bytes(j, field.name);
    return stats;
  }

  std::vector<mold::CacheEntryState> residency(const Json& j) const {
    std::vector<mold::CacheEntryState> out;
    if (j.is_null()) return out;
    if (!j.is_array()) bad("a residency that is not a list");
    for (const auto& item : j) {
      mold::CacheEntryState e;
      e.name = member(item, "component").get<std::string>();
      const std::string r = member(item, "residency").get<std::string>();
      e.residency = r == "device"   ? mold::Residency::device
                    : r == "parked" ? mold::Residency::parked
                                    : mold::Residency::unloaded;
      e.bytes = bytes(item, "bytes");
      e.loads = item.value("loads", std::uint64_t(0));
      e.load_seconds = item.value("load_seconds", 0.0);
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  std::string server_;
};

}  // namespace

mold::MemoryProfile run_remote_profile(const RemoteProfileRun& remote) {
  const ProfileRun& r = remote.run;
  net::ClientOptions options;
  options.api_key = remote.api_key;
  options.user_agent = fmt::format("molddiag/{}", MOLD_VERSION);
  options.read_timeout = std::chrono::seconds(600);
  net::HttpClient client(remote.server, options);
  const std::string where = remote.server.display();
  auto request = [&](const char* method, const char* path,
                     const std::string& body) {
    try {
      return client.request(method, path, body);
    } catch (const net::ConnectionError& e) {
      throw mold::Error(fmt::format(
          "{}.\n  Is `mold serve` running there? Check --remote.", e.what()));
    }
  };
  auto refused = [&](const net::ClientResponse& answer,
                     const std::string& what) -> void {
    const Json body = mold::parse_untrusted_json(answer.body);
    const std::string message =
        body.is_object() && body.contains("error") && body["error"].is_string()
            ? body["error"].get<std::string>()
            : fmt::format("HTTP {}", answer.status);
    throw mold::Error(
        fmt::format("the server at {} could not {}: {}", where, what, message));
  };

  const auto status = request("GET", "/api/status", "");
  if (status.status != 200) refused(status, "say its status");
  const Json info = mold::parse_untrusted_json(status.body);
  ServerAnswer answer(where);
  mold::MemoryProfile profile;
  profile.driver = "remote";
  profile.subject = fmt::format("{}{} on {}", r.model_spec,
                                r.tiny ? " (tiny, seeded weights)" : "", where);
  profile.backend = info.is_object() ? info.value("backend", "") : "";
  profile.device = info.is_object() ? info.value("device", "") : "";
  if (!r.quiet)
    std::cerr << fmt::format("molddiag: {} images of {} ({}, {})\n", r.images,
                             profile.subject, profile.backend, profile.device);
  // The source images, read once and sent with every request.
  Json images = Json::array();
  for (const std::string& file : r.source_images)
    images.push_back(mold::net::base64_encode(
        mold::tools::read_image_file(file, "--image")));
  mold::Bytes last = 0;
  for (int i = 0; i < r.images; ++i) {
    Json body = mold::net::generate_fields_json(r.generate, i);
    body["model"] = r.model_spec;
    if (r.tiny) body["tiny"] = true;
    if (!images.empty()) body["images"] = images;
    const auto made = request("POST", "/api/generate", body.dump());
    if (made.status != 200)
      refused(made, fmt::format("make image {} of {}", i + 1, r.images));
    const std::string id = made.header("X-Request-ID");
    const auto memory = request("GET", "/api/memory", "");
    if (memory.status != 200) refused(memory, "say its memory");
    const Json m = mold::parse_untrusted_json(memory.body);
    const Json& last_request = answer.member(m, "last_request");
    if (last_request.is_null() ||
        answer.member(last_request, "request_id") != id)
      throw mold::Error(fmt::format(
          "the server at {} made another request between image {} and its "
          "memory record: profile a server no one else uses meanwhile",
          where, i + 1));
    mold::ImageSample image;
    image.image = i;
    image.seed = r.generate.seed + std::uint64_t(i);
    image.seconds = last_request.value("seconds", 0.0);
    image.after = answer.memory(answer.member(last_request, "after_cleanup"));
    image.residency = answer.residency(last_request.value("residency", Json()));
    for (const auto& p : answer.member(last_request, "phases")) {
      // A phase the model reused (the prompt's embeddings of the request
      // before) ran nothing: no sample, as ProfileRecorder takes none.
      if (p.value("status", "") == "reused") continue;
      mold::PhaseSample phase;
      phase.image = i;
      phase.phase = answer.member(p, "phase").get<std::string>();
      phase.component = p.value("component", "");
      phase.before = answer.memory(answer.member(p, "before"));
      phase.after = answer.memory(answer.member(p, "after"));
      phase.estimate = answer.bytes(p, "estimate_bytes");
      phase.seconds = p.value("seconds", 0.0);
      if (p.contains("parked") && p["parked"].is_array())
        for (const auto& name : p["parked"])
          if (name.is_string()) phase.parked.push_back(name.get<std::string>());
      phase.residency = answer.residency(p.value("residency", Json()));
      profile.phases.push_back(std::move(phase));
    }
    if (!r.quiet) {
      const mold::Bytes now = image.after.allocated;
      const std::string delta =
          i == 0        ? std::string()
          : now >= last ? fmt::format(" (+{})", mold::format_bytes(now - last))
                        : fmt::format(" (-{})", mold::format_bytes(last - now));
      last = now;
      std::cerr << fmt::format(
          "[{}/{}] allocated {}{}, reserved {}, server RSS {}, {:.1f} s\n",
          i + 1, r.images, mold::format_bytes(now), delta,
          mold::format_bytes(image.after.reserved),
          mold::format_bytes(image.after.host_rss), image.seconds);
    }
    profile.images.push_back(std::move(image));
  }
  return profile;
}

}  // namespace molddiag
