// OpenAI's own Node client (npm "openai", pinned in
// tests/openai_client/package.json) against a real `mold serve --tiny`:
// tests/openai_client/images.mjs makes images as base64 and by address, and
// checks the client's errors for 400, 401, 404 and a full queue's 503 with
// Retry-After, which the client waits out and retries. The client is
// installed with `npm ci` into the build tree the first time; where npm or
// its registry cannot be reached, the two cases say so and are skipped.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/serve_requests.hpp"
#include "support/server_client.hpp"
#include "support/server_process.hpp"
#include "support/wait.hpp"

namespace fs = std::filesystem;
using namespace mold::test;

namespace {

const char* const kOpenAiKey = "openai-test-key";

bool same_file(const fs::path& a, const fs::path& b) {
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  return x && y &&
         std::string(std::istreambuf_iterator<char>(x), {}) ==
             std::string(std::istreambuf_iterator<char>(y), {});
}

/// An exclusive lock on a file (flock), held while it lives: the test
/// processes that run side by side install the client one at a time.
class FileLock {
 public:
  explicit FileLock(const fs::path& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw std::runtime_error("cannot lock " + path.string());
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

/// The client's folder in the build tree, its package installed (npm ci, once
/// per lock file); "" with `why` set when Node, npm or the registry is not
/// there. Another process's client may be running from it meanwhile: a file
/// is replaced only when it differs, and npm ci runs only when the installed
/// package is not the locked one, under a lock.
std::string installed_client(std::string& why) {
  const fs::path source = kOpenAiClientSource, dir = kOpenAiClientInstall;
  fs::create_directories(dir);
  const FileLock lock(dir / ".install.lock");
  for (const char* file : {"package.json", "images.mjs"})
    if (!same_file(source / file, dir / file))
      fs::copy_file(source / file, dir / file,
                    fs::copy_options::overwrite_existing);
  const bool current =
      same_file(source / "package-lock.json", dir / "package-lock.json") &&
      fs::exists(dir / "node_modules/openai/package.json");
  if (current) return dir.string();
  fs::copy_file(source / "package-lock.json", dir / "package-lock.json",
                fs::copy_options::overwrite_existing);
  const auto npm = run_process("/usr/bin/timeout",
                               {"180", "npm", "ci", "--prefix", dir.string(),
                                "--ignore-scripts", "--no-audit", "--no-fund"});
  if (npm.exit_code != 0) {
    why = "npm ci of tests/openai_client failed (exit " +
          std::to_string(npm.exit_code) + "): " + npm.err.substr(0, 600);
    return {};
  }
  return dir.string();
}

std::string client_or_skip() {
  std::string why;
  if (run_process("/usr/bin/env", {"node", "--version"}).exit_code != 0)
    why = "node is not installed (scripts/install-deps.sh installs it)";
  const std::string dir = why.empty() ? installed_client(why) : "";
  if (dir.empty())
    WARN("SKIPPED: OpenAI's Node client cannot be installed here: " << why);
  return dir;
}

ProcessResult node(const std::string& dir, const ServerProcess& server,
                   const char* scenario) {
  return run_process("/usr/bin/timeout",
                     {"300", "node", dir + "/images.mjs",
                      std::to_string(server.port()), kOpenAiKey, scenario});
}

/// The "ok NAME" lines of the client's output.
int passed_checks(const std::string& out) {
  int n = 0;
  for (std::size_t at = out.find("ok "); at != std::string::npos;
       at = out.find("ok ", at + 1))
    if (at == 0 || out[at - 1] == '\n') ++n;
  return n;
}

}  // namespace

TEST_CASE("OpenAI's Node client makes images with mold serve --tiny",
          "[net][serve][openai]") {
  const std::string dir = client_or_skip();
  if (dir.empty()) return;
  ServerProcess server({"--tiny", "--quiet", "--token", kOpenAiKey});
  const auto r = node(dir, server, "basic");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(passed_checks(r.out) == 21);
}

TEST_CASE("OpenAI's Node client waits out a full queue's 503 Retry-After",
          "[net][serve][openai]") {
  const std::string dir = client_or_skip();
  if (dir.empty()) return;
  SlowGate gate;
  ServerProcess server({"--tiny", "--quiet", "--token", kOpenAiKey, "--queue",
                        "0", "--plugin-dir", kFaultyPluginDir},
                       gate.env());
  HttpClient client = client_for(server, kOpenAiKey);
  int slow_status = 0;
  std::thread running([&] {
    HttpClient own = client_for(server, kOpenAiKey);
    slow_status = own.request("POST", "/api/generate", slow(1)).status;
  });
  wait_busy(client);
  ProcessResult r;
  std::thread retrying([&] { r = node(dir, server, "busy"); });
  // The client's plain request and its retrying one's first try were both
  // refused: let the running job end.
  wait_until(
      [&] {
        return json_of(client.request(
                   "GET", "/api/status"))["requests"]["rejected"] >= 2;
      },
      "the client's two refused requests");
  gate.open();
  retrying.join();
  running.join();
  INFO(r.out << r.err);
  CHECK(slow_status == 200);
  CHECK(r.exit_code == 0);
  CHECK(passed_checks(r.out) == 4);
}
