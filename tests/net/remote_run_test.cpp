// mold run against a real mold serve on loopback (MOLD_HOST): the same
// images and progress lines as a local run, the server's errors labelled as
// the server's, and incident 1 of docs/incidents.md end to end: a client that
// says it is a Mac, a CPU server under a memory limit, --batch 2, the second
// image out of memory where the first fit.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/net/http_client.hpp>
#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/server_process.hpp"

using namespace mold::test;
namespace fs = std::filesystem;

using mold::test::read_file;

namespace {

std::vector<std::string> fox_args(const TempDir& out,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "run", "z-image-turbo", "a red fox", "--tiny",  "--width",
      "64",  "--height",      "64",        "--steps", "2",
      "-o",  out.path()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// The progress lines without their times, for comparing two runs.
std::vector<std::string> progress_shape(const std::string& err) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < err.size()) {
    const std::size_t end = err.find('\n', start);
    std::string line = err.substr(start, end - start);
    start = end == std::string::npos ? err.size() : end + 1;
    if (line.rfind("[", 0) != 0) continue;
    // "[1/2] denoise:" or "[1/2] saved": the first two words.
    lines.push_back(line.substr(0, line.find(' ', line.find(' ') + 1)));
  }
  return lines;
}

}  // namespace

TEST_CASE("mold run with MOLD_HOST: the server's images, written here",
          "[net][remote]") {
  ServerProcess server({"--tiny"});
  TempDir remote_out, local_out;
  const auto remote =
      run_mold(fox_args(remote_out, {"--batch", "2", "--seed", "5"}),
               {{"MOLD_HOST", server.host()}});
  INFO(remote.err);
  REQUIRE(remote.exit_code == 0);
  const auto local =
      run_mold(fox_args(local_out, {"--batch", "2", "--seed", "5"}));
  REQUIRE(local.exit_code == 0);
  for (const char* name : {"z-image-turbo-5.png", "z-image-turbo-6.png"})
    CHECK(read_file(fs::path(remote_out.path()) / name) ==
          read_file(fs::path(local_out.path()) / name));
  CHECK_THAT(remote.err, Catch::Contains("on " + server.host() + " (cpu"));
  // The same progress lines as the local run, phase by phase.
  CHECK(progress_shape(remote.err) == progress_shape(local.err));
  CHECK_THAT(remote.err, Catch::Contains("[2/2] denoise: step 2/2"));
  // The server's model kept the prompt's embeddings from the first request,
  // as the local run's pipeline kept them from its first image.
  CHECK_THAT(remote.err, Catch::Contains("[2/2] text_encode: reused (the "
                                         "embeddings of the last image"));
  CHECK_THAT(local.err, Catch::Contains("[2/2] text_encode: reused"));
  // One request per image, seed + i.
  const std::string log = server.log();
  CHECK_THAT(log, Catch::Contains("\"path\":\"/api/generate/stream\""));
}

TEST_CASE("mold run with MOLD_HOST --json reports the server's phases",
          "[net][remote]") {
  ServerProcess server({"--tiny"});
  TempDir out;
  const auto r =
      run_mold(fox_args(out, {"--json"}), {{"MOLD_HOST", server.host()}});
  REQUIRE(r.exit_code == 0);
  const auto json = nlohmann::json::parse(r.out);
  CHECK(json["server"] == server.host());
  CHECK(json["backend"] == "cpu");
  CHECK(json["phases"].size() == 3);
  CHECK(json["images"].size() == 1);
}

TEST_CASE("mold run: a server that is not there, or a bad MOLD_HOST",
          "[net][remote]") {
  TempDir out;
  int port = 0;
  {
    ServerProcess gone({"--tiny"});
    port = gone.port();
  }
  const auto refused = run_mold(
      fox_args(out), {{"MOLD_HOST", "127.0.0.1:" + std::to_string(port)}});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("127.0.0.1:" + std::to_string(port)));
  CHECK_THAT(refused.err, Catch::Contains("refused"));
  CHECK_THAT(refused.err, Catch::Contains("--local"));
  CHECK_THAT(refused.err, !Catch::Contains("terminate called"));

  const auto bad = run_mold(fox_args(out), {{"MOLD_HOST", "https://gpu-box"}});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("MOLD_HOST"));
  CHECK_THAT(bad.err, Catch::Contains("https"));

  const auto plan =
      run_mold(fox_args(out, {"--plan"}), {{"MOLD_HOST", "gpu-box"}});
  CHECK(plan.exit_code == 2);
  CHECK_THAT(plan.err, Catch::Contains("--local"));

  // --local runs here whatever MOLD_HOST says.
  const auto local =
      run_mold(fox_args(out, {"--local"}), {{"MOLD_HOST", "127.0.0.1:1"}});
  CHECK(local.exit_code == 0);
}

TEST_CASE("mold run: the server's key comes from MOLD_API_KEY",
          "[net][remote]") {
  ServerProcess server({"--tiny", "--token", "k3y"});
  TempDir out;
  const auto without = run_mold(fox_args(out), {{"MOLD_HOST", server.host()}});
  CHECK(without.exit_code == 1);
  CHECK_THAT(without.err, Catch::Contains("MOLD_API_KEY"));
  const auto with = run_mold(
      fox_args(out), {{"MOLD_HOST", server.host()}, {"MOLD_API_KEY", "k3y"}});
  INFO(with.err);
  CHECK(with.exit_code == 0);
}

TEST_CASE(
    "incident 1: a remote CPU out-of-memory is labelled as the server's, "
    "never as the client's platform",
    "[net][remote][incident]") {
  // faulty-batch-leak keeps 3 MiB per image in its denoise, beyond its
  // estimate: under 12 MiB the first image fits and the second runs out.
  ServerProcess server({"--tiny", "--cpu-memory-limit", "12 MiB",
                        "--plugin-dir", kFaultyPluginDir});
  TempDir out;
  const auto r = run_mold(
      {"run", "faulty-batch-leak", "a red fox", "--batch", "2", "-o",
       out.path()},
      {{"MOLD_HOST", server.host()}, {"MOLD_CLIENT_PLATFORM", "macos"}});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  // The first image was made and written.
  CHECK(fs::exists(fs::path(out.path()) / "faulty-batch-leak-0.png"));
  CHECK_FALSE(fs::exists(fs::path(out.path()) / "faulty-batch-leak-1.png"));
  CHECK_THAT(r.err, Catch::Contains("Remote server out of memory on " +
                                    server.host() + " (CPU"));
  CHECK_THAT(r.err, !Catch::Contains("Metal"));
  CHECK_THAT(r.err, !Catch::Contains("MPS"));
  // The hints name the server and --batch.
  CHECK_THAT(r.err, Catch::Contains("image 2 of --batch 2"));
  CHECK_THAT(r.err, Catch::Contains("on the server (" + server.host() + ")"));
  CHECK_THAT(r.err, Catch::Contains("molddiag leak --remote " + server.host()));
  // With what image 1 was measured to need and what the server estimated.
  CHECK_THAT(r.err, Catch::Contains("on image 1, text_encode needed ") &&
                        Catch::Contains("denoise needed ") &&
                        Catch::Contains("(the server estimated "));
  // The server is still there and counted it.
  CHECK(server.alive());
  mold::net::HttpClient client(
      mold::net::parse_server_address(server.host(), "test"));
  const std::string metrics = client.request("GET", "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("mold_ooms_total{backend=\"cpu\"} 1"));
  CHECK_THAT(metrics,
             Catch::Contains("mold_generations_total{outcome=\"oom\"} 1"));
  CHECK_THAT(metrics,
             Catch::Contains("mold_generations_total{outcome=\"ok\"} 1"));
}

TEST_CASE("molddiag leak --remote finds a planted server-side leak",
          "[net][remote][profile]") {
  // The server's memory is measured: under ASan its quarantine is off.
  ServerProcess server({"--tiny", "--quiet", "--plugin-dir", kFaultyPluginDir},
                       measured_memory_env());
  const auto r =
      run_molddiag({"leak", "faulty-leak:denoise", "--remote", server.host(),
                    "--images", "11", "--plugin-dir", kFaultyPluginDir});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.out,
             Catch::Contains("LEAK: allocated grows 64.00 KiB per image"));
  CHECK_THAT(r.out,
             Catch::Contains("kept by:    denoise (transformer, inferred)"));
  CHECK_THAT(r.out, Catch::Contains("on " + server.host()));
}

TEST_CASE("molddiag parity and leak --remote: a clean server holds parity",
          "[net][remote][profile]") {
  ServerProcess server({"--tiny", "--quiet"}, measured_memory_env());
  const std::vector<std::string> sizes = {"--width", "64",      "--height",
                                          "64",      "--steps", "2"};
  std::vector<std::string> parity = {"parity",   "z-image-turbo", "--tiny",
                                     "--remote", server.host(),   "--images",
                                     "4"};
  parity.insert(parity.end(), sizes.begin(), sizes.end());
  const auto p = run_molddiag(parity);
  INFO(p.out << p.err);
  CHECK(p.exit_code == 0);
  CHECK_THAT(p.out, Catch::Contains("parity holds"));
  std::vector<std::string> leak = {"leak",     "z-image-turbo", "--tiny",
                                   "--remote", server.host(),   "--images",
                                   "6",        "--json"};
  leak.insert(leak.end(), sizes.begin(), sizes.end());
  const auto l = run_molddiag(leak);
  INFO(l.err);
  CHECK(l.exit_code == 0);
  const auto report = nlohmann::json::parse(l.out);
  CHECK(report["driver"] == "remote");
  const auto unreachable = run_molddiag(
      {"leak", "z-image-turbo", "--tiny", "--remote", "127.0.0.1:1"});
  CHECK(unreachable.exit_code == 1);
  CHECK_THAT(unreachable.err, Catch::Contains("127.0.0.1:1"));
  const auto bad =
      run_molddiag({"leak", "z-image-turbo", "--remote", "https://x"});
  CHECK(bad.exit_code == 2);
}
