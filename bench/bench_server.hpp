#pragma once
// For the server benchmarks: a real `mold serve` started as a child process
// on a free loopback port, and keep-alive HTTP/1.1 requests over a plain
// socket (the client side costs as little as it can, so the numbers are the
// server's).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_paths.hpp"

extern char** environ;

namespace mold_bench {

class BenchServer {
 public:
  explicit BenchServer(std::vector<std::string> args) {
    char dir_template[] = "/tmp/mold-bench-XXXXXX";
    dir_ = mkdtemp(dir_template);
    const std::string port_file = dir_ + "/port";
    std::vector<std::string> argv_s = {
        mold_bench::kMold, "serve",  "--quiet", "--port", "0",
        "--port-file",     port_file};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir_ + "/stderr";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, mold_bench::kMold, &actions, nullptr, argv.data(),
                    environ) != 0)
      throw std::runtime_error("cannot start mold serve");
    posix_spawn_file_actions_destroy(&actions);
    // The port file is written atomically, once listening: "PORT\n".
    for (int i = 0; i < 6000; ++i) {
      std::ifstream in(port_file);
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (!text.empty() && text.back() == '\n') {
        port_ = std::stoi(text);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("mold serve did not start");
  }
  ~BenchServer() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    std::system(("rm -rf " + dir_).c_str());
  }
  int port() const { return port_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

/// One keep-alive connection.
class Connection {
 public:
  explicit Connection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("cannot connect");
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Connection() { close(fd_); }
  Connection(const Connection&) = delete;

  /// Sends `request` and reads one response; its status, and the body.
  int exchange(const std::string& request, std::string* body = nullptr) {
    for (std::size_t sent = 0; sent < request.size();) {
      const ssize_t n =
          send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      sent += std::size_t(n);
    }
    while (true) {
      const auto end = buffer_.find("\r\n\r\n");
      if (end != std::string::npos) {
        const auto cl = buffer_.find("Content-Length: ");
        const std::size_t length =
            cl != std::string::npos && cl < end
                ? std::strtoull(buffer_.c_str() + cl + 16, nullptr, 10)
                : 0;
        if (buffer_.size() >= end + 4 + length) {
          const int status = std::atoi(buffer_.c_str() + 9);
          if (body) *body = buffer_.substr(end + 4, length);
          buffer_.erase(0, end + 4 + length);
          return status;
        }
      }
      char chunk[65536];
      const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) throw std::runtime_error("connection closed");
      buffer_.append(chunk, std::size_t(n));
    }
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace mold_bench
