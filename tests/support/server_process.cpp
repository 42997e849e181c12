#include "support/server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/paths.hpp"

namespace mold::test {

using namespace std::chrono_literals;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

ServerProcess::ServerProcess(std::vector<std::string> args,
                             std::map<std::string, std::string> env,
                             std::vector<std::string> wrapper) {
  auto full_env = isolated_env(dir_);
  for (const auto& [k, v] : env) full_env[k] = v;
  const std::string port_file = dir_.path() + "/port";
  std::vector<std::string> argv_strings = wrapper;
  argv_strings.insert(argv_strings.end(), {kMold, "serve"});
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  argv_strings.insert(argv_strings.end(),
                      {"--port", "0", "--port-file", port_file});
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = environment_with(full_env);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string out = dir_.path() + "/stdout";
  const std::string err = dir_.path() + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = wrapper.empty()
                     ? posix_spawn(&pid_, kMold, &actions, nullptr, argv.data(),
                                   envp.data())
                     : posix_spawnp(&pid_, wrapper[0].c_str(), &actions,
                                    nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start mold serve");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = slurp(port_file);
    if (!text.empty() && text.back() == '\n') {
      port_ = std::stoi(text);
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("mold serve exited: " + log());
    }
    std::this_thread::sleep_for(20ms);  // poll the port file; 60 s deadline
  }
  stop(1);
  throw std::runtime_error("mold serve did not listen within 60 s: " + log());
}

ServerProcess::~ServerProcess() { stop(); }

std::string ServerProcess::host() const {
  return "127.0.0.1:" + std::to_string(port_);
}

bool ServerProcess::alive() const {
  if (pid_ <= 0) return false;
  int status = 0;
  return waitpid(pid_, &status, WNOHANG) == 0;
}

std::string ServerProcess::log() const {
  return slurp(dir_.path() + "/stderr");
}

int ServerProcess::stop(int seconds) {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0) {
      pid_ = -1;
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);  // poll the exit; deadline above
  }
  pid_ = -1;
  exit_code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : -1;
  return exit_code_;
}

long long ServerProcess::rss() const {
  if (pid_ <= 0) return 0;
  std::ifstream statm("/proc/" + std::to_string(pid_) + "/statm");
  long long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

namespace {
// A "Key:   N kB" line of /proc/PID/status, in bytes; 0 when absent.
long long status_bytes(pid_t pid, const std::string& key) {
  if (pid <= 0) return 0;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::stoll(line.substr(key.size() + 1)) * 1024;
  return 0;
}
}  // namespace

long long ServerProcess::anonymous_rss() const {
  return status_bytes(pid_, "RssAnon");
}

long long ServerProcess::peak_rss() const {
  return status_bytes(pid_, "VmHWM");
}

std::string raw_exchange(int port, const std::string& bytes, int timeout_ms,
                         int trickle, int pause_ms) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return {};
  }
  std::size_t sent = 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (sent < bytes.size()) {
    const std::size_t n = sent < std::size_t(trickle) ? 1 : bytes.size() - sent;
    const ssize_t w = send(fd, bytes.data() + sent, n, MSG_NOSIGNAL);
    if (w <= 0) break;
    sent += std::size_t(w);
    if (sent <= std::size_t(trickle) && pause_ms > 0) {
      // Trickling: stop early once the server answered (it cut us off).
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, pause_ms) > 0) break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
  }
  std::string response;
  char buffer[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left)) <= 0) break;
    const ssize_t r = recv(fd, buffer, sizeof buffer, 0);
    if (r <= 0) break;
    response.append(buffer, std::size_t(r));
  }
  close(fd);
  return response;
}

int status_of_response(const std::string& response) {
  if (response.compare(0, 9, "HTTP/1.1 ") != 0 || response.size() < 12)
    return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

}  // namespace mold::test
