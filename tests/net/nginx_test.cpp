// Scale-out with an existing engine: two mold serve behind nginx (the Debian
// package, started here on loopback) with the configuration of
// docs/deployment.md as it is written there (ports and temporary paths
// swapped in), serving one client's batch, two clients at once against
// servers with no queue (503s retried on the other server), and a server that
// goes away.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/server_process.hpp"

using namespace mold::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

using mold::test::read_file;

namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string replace_all(std::string text, const std::string& from,
                        const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos;
       at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

/// The nginx configuration block of docs/deployment.md.
std::string documented_config() {
  const std::string doc =
      read_file(fs::path(mold::test::kDocsDir) / "deployment.md");
  const std::string marker = "```nginx\n# mold-test: nginx.conf\n";
  const auto start = doc.find(marker);
  REQUIRE(start != std::string::npos);
  const auto end = doc.find("```", start + marker.size());
  REQUIRE(end != std::string::npos);
  return doc.substr(start + marker.size(), end - start - marker.size());
}

/// nginx in the foreground with the documented configuration in front of
/// two servers.
class Nginx {
 public:
  Nginx(const std::string& upstream1, const std::string& upstream2) {
    const char* binary = "/usr/sbin/nginx";
    if (!fs::exists(binary))
      FAIL("nginx is not installed: run scripts/install-deps.sh");
    port_ = free_port();
    const std::string prefix = dir_.path();
    std::string conf = documented_config();
    conf = replace_all(conf, "gpu-1:7680", upstream1);
    conf = replace_all(conf, "gpu-2:7680", upstream2);
    conf = replace_all(conf, "listen 8080;",
                       "listen 127.0.0.1:" + std::to_string(port_) + ";");
    conf = replace_all(conf, "http {\n",
                       "http {\n  access_log " + prefix +
                           "/access.log;\n"
                           "  client_body_temp_path " +
                           prefix +
                           "/body;\n"
                           "  proxy_temp_path " +
                           prefix +
                           "/proxy;\n"
                           "  fastcgi_temp_path " +
                           prefix +
                           "/fastcgi;\n"
                           "  uwsgi_temp_path " +
                           prefix +
                           "/uwsgi;\n"
                           "  scgi_temp_path " +
                           prefix + "/scgi;\n");
    conf = "error_log " + prefix + "/error.log;\npid " + prefix +
           "/nginx.pid;\n" + (geteuid() == 0 ? "user root;\n" : "") + conf;
    const std::string conf_path = dir_.write("nginx.conf", conf);
    std::vector<std::string> args = {binary,    "-p", prefix,       "-c",
                                     conf_path, "-g", "daemon off;"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = prefix + "/stderr";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(posix_spawn(&pid_, binary, &actions, nullptr, argv.data(),
                        environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 500; ++i) {
      if (status_of_response(raw_exchange(
              port_,
              "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              1000)) == 200)
        return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL("nginx exited: " << read_file(log)
                              << read_file(prefix + "/error.log"));
      }
      std::this_thread::sleep_for(20ms);  // poll /health, 500 tries
    }
    FAIL("nginx did not answer /health: " << read_file(prefix + "/error.log"));
  }
  ~Nginx() {
    if (pid_ > 0) {
      kill(pid_, SIGQUIT);
      int status = 0;
      for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(10ms);  // poll the exit, then SIGKILL
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string access_log() const {
    return read_file(dir_.path() + "/access.log");
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos;
       at += what.size())
    ++n;
  return n;
}

std::vector<std::string> fox(const TempDir& out, const std::string& batch,
                             const std::string& seed) {
  return {"run",     "z-image-turbo", "a red fox", "--tiny",  "--width",
          "64",      "--height",      "64",        "--steps", "2",
          "--batch", batch,           "--seed",    seed,      "-o",
          out.path()};
}

}  // namespace

TEST_CASE("nginx in front of two mold serve spreads one client's batch",
          "[net][nginx]") {
  ServerProcess a({"--tiny"}), b({"--tiny"});
  Nginx nginx(a.host(), b.host());
  TempDir out;
  const auto r = run_mold(fox(out, "6", "0"), {{"MOLD_HOST", nginx.host()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (int seed = 0; seed < 6; ++seed)
    CHECK(fs::exists(fs::path(out.path()) /
                     ("z-image-turbo-" + std::to_string(seed) + ".png")));
  // Both servers made some of the images.
  const int on_a = count(a.log(), "\"path\":\"/api/generate/stream\"");
  const int on_b = count(b.log(), "\"path\":\"/api/generate/stream\"");
  CHECK(on_a + on_b == 6);
  CHECK(on_a >= 1);
  CHECK(on_b >= 1);
  // The servers saw the client's name for them: nginx's address.
  CHECK_THAT(r.err, Catch::Contains("on " + nginx.host()));
}

TEST_CASE("nginx retries a busy server's 503 on the other one",
          "[net][nginx]") {
  // No queue: a server that is busy answers 503 QUEUE_FULL at once.
  ServerProcess a({"--tiny", "--queue", "0"}), b({"--tiny", "--queue", "0"});
  Nginx nginx(a.host(), b.host());
  TempDir out1, out2;
  ProcessResult r1, r2;
  std::thread first([&] {
    r1 = run_mold(fox(out1, "3", "0"), {{"MOLD_HOST", nginx.host()}});
  });
  std::thread second([&] {
    r2 = run_mold(fox(out2, "3", "100"), {{"MOLD_HOST", nginx.host()}});
  });
  first.join();
  second.join();
  INFO(r1.err << r2.err);
  CHECK(r1.exit_code == 0);
  CHECK(r2.exit_code == 0);
  for (int i = 0; i < 3; ++i) {
    CHECK(fs::exists(fs::path(out1.path()) /
                     ("z-image-turbo-" + std::to_string(i) + ".png")));
    CHECK(fs::exists(fs::path(out2.path()) /
                     ("z-image-turbo-" + std::to_string(100 + i) + ".png")));
  }
  CHECK(a.alive());
  CHECK(b.alive());
}

TEST_CASE("nginx takes a server that went away out, the other serves",
          "[net][nginx]") {
  ServerProcess a({"--tiny"});
  auto b = std::make_unique<ServerProcess>(std::vector<std::string>{"--tiny"});
  Nginx nginx(a.host(), b->host());
  CHECK(b->stop() == 0);
  TempDir out;
  const auto r = run_mold(fox(out, "3", "0"), {{"MOLD_HOST", nginx.host()}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(a.log(), "\"path\":\"/api/generate/stream\"") == 3);
}
