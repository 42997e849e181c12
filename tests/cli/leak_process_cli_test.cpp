// molddiag leak's black-box driver on a held-out process: a stand-in server
// (tests/support/leaky_process.cpp) that keeps memory per request or not,
// driven by --each through two FIFOs and sampled by pid from /proc.

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/sanitizer.hpp"

extern char** environ;

using mold::test::kResidentPerTouchedByte;
using mold::test::TempDir;

using mold::test::run_molddiag_measured;

namespace {

/// molddiag, its process memory measured as it is (measured_memory_env).
/// The stand-in server, running until destroyed.
class Server {
 public:
  Server(const TempDir& dir, std::size_t bytes_per_request) {
    REQUIRE(mkfifo((dir.path() + "/in").c_str(), 0600) == 0);
    REQUIRE(mkfifo((dir.path() + "/ack").c_str(), 0600) == 0);
    const std::string bytes = std::to_string(bytes_per_request);
    std::string program = mold::test::kLeakyProcess, folder = dir.path();
    char* argv[] = {program.data(), folder.data(),
                    const_cast<char*>(bytes.c_str()), nullptr};
    REQUIRE(posix_spawn(&pid_, program.c_str(), nullptr, nullptr, argv,
                        environ) == 0);
    each_ = "echo request > '" + folder + "/in' && read answer < '" + folder +
            "/ack'";
  }
  ~Server() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  const std::string& each() const { return each_; }

 private:
  pid_t pid_ = 0;
  std::string each_;
};

}  // namespace

TEST_CASE("the black-box driver finds a server that keeps memory per request",
          "[cli][leak][process]") {
  TempDir dir;
  const Server server(dir, 4 * 1024 * 1024);
  const auto r = run_molddiag_measured(
      {"leak", "--pid", std::to_string(server.pid()), "--each", server.each(),
       "--images", "8", "--settle", "0.05", "--json", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 3);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["driver"] == "process");
  CHECK_THAT(j["subject"].get<std::string>(),
             Catch::StartsWith("pid " + std::to_string(server.pid())));
  CHECK(j["leak"]["verdict"] == "leak");
  CHECK(j["leak"]["host_only"] == true);
  const double slope = j["leak"]["series"]["host_rss"]["slope"];
  CHECK(slope >= 0.9 * 4 * 1024 * 1024);
  CHECK(slope <= 1.1 * kResidentPerTouchedByte * 4 * 1024 * 1024);
  CHECK_FALSE(j.contains("parity"));  // a black box has no phases
}

TEST_CASE(
    "the black-box driver finds 512 KiB a request in 20 requests; "
    "--threshold moves its host threshold too",
    "[cli][leak][process]") {
  TempDir dir;
  const Server server(dir, 512 * 1024);
  auto r = run_molddiag_measured({"leak", "--pid", std::to_string(server.pid()),
                                  "--each", server.each(), "--images", "20",
                                  "--settle", "0.02", "--json", "--quiet"});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["leak"]["host_only"] == true);
  CHECK(j["leak"]["series"]["host_rss"]["threshold"] == 256 * 1024);
  const double slope = j["leak"]["series"]["host_rss"]["slope"];
  CHECK(slope >= 0.9 * 512 * 1024);
  CHECK(slope <= 1.1 * kResidentPerTouchedByte * 512 * 1024);
  // A threshold above what it keeps: not a leak. The header says what was
  // sampled.
  r = run_molddiag_measured(
      {"leak", "--pid", std::to_string(server.pid()), "--each", server.each(),
       "--images", "8", "--settle", "0.02", "--threshold", "4 MiB", "--quiet"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("sampled from outside: the process's "
                                    "resident set"));
  CHECK_THAT(r.out, !Catch::Contains("on  ("));
}

TEST_CASE("the black-box driver finds a clean server clean",
          "[cli][leak][process]") {
  TempDir dir;
  const Server server(dir, 0);
  const auto r = run_molddiag_measured(
      {"leak", "--pid", std::to_string(server.pid()), "--each", server.each(),
       "--images", "8", "--settle", "0.05", "--quiet"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("verdict:    clean"));
}

TEST_CASE(
    "the black-box driver: a missing process, a failing or hanging "
    "command, and usage errors are named",
    "[cli][leak][process]") {
  TempDir dir;
  const Server server(dir, 0);
  const std::string pid = std::to_string(server.pid());
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"leak", "--pid", "999999999", "--each", "true"},
       1,
       "--pid 999999999: no such process is visible here"},
      {{"leak", "--pid", pid, "--each", "exit 2", "--images", "6"},
       1,
       "--each exited with status 2 on run 1 of 6"},
      {{"leak", "--pid", pid, "--each", "sleep 30", "--timeout", "1"},
       1,
       "--each did not finish within 1 s; it was killed"},
      {{"leak", "--pid", pid}, 2, "--pid needs --each COMMAND"},
      {{"leak", "z-image-turbo", "--pid", pid, "--each", "true"},
       2,
       "give MODEL or --pid, not both"},
      {{"leak", "z-image-turbo", "--tiny", "--each", "true"},
       2,
       "--each goes with --pid PID"},
      {{"leak", "--pid", pid, "--each", "true", "--settle", "-1"},
       2,
       "--settle -1: give 0 to 3600 seconds"},
  };
  for (const auto& c : cases) {
    const auto r = run_molddiag_measured(c.args);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}
