#pragma once
// A real `mold serve` for the server tests: started on a free loopback port
// (--port 0 --port-file), its stderr kept, stopped with SIGTERM (killed if it
// does not stop) when the test is done.

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace mold::test {

class ServerProcess {
 public:
  /// Starts `mold serve ARGS --port 0 --port-file ...` in isolated_env() of a
  /// home of its own plus `env`; waits until it listens (throws
  /// std::runtime_error with its stderr when it exits or takes > 60 s).
  /// `wrapper`: a command mold runs under (e.g. {"prlimit", "--nofile=200"}),
  /// found on PATH.
  explicit ServerProcess(std::vector<std::string> args,
                         std::map<std::string, std::string> env = {},
                         std::vector<std::string> wrapper = {});
  ~ServerProcess();  ///< stop()
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  std::string host() const;  ///< "127.0.0.1:PORT"
  pid_t pid() const { return pid_; }
  bool alive() const;
  /// Its stderr so far.
  std::string log() const;
  /// SIGTERM, wait up to `seconds`, then SIGKILL. The exit code, 128 +
  /// signal when killed; -1 when it was not running.
  int stop(int seconds = 30);
  /// The resident set size of the server now (bytes; 0 when gone).
  long long rss() const;
  /// Its anonymous resident memory (RssAnon: the heap and stacks, not the
  /// shared libraries' pages, which come and go with the page cache; bytes;
  /// 0 when gone).
  long long anonymous_rss() const;
  /// The largest resident set it has had (VmHWM; bytes; 0 when gone).
  long long peak_rss() const;

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
};

/// One raw exchange with a server on loopback: connects to `port`, writes
/// `bytes` (optionally `pause_ms` between each of the first `trickle` bytes),
/// then reads until the server closes or `timeout_ms` passes. Never throws;
/// "" when it could not connect.
std::string raw_exchange(int port, const std::string& bytes,
                         int timeout_ms = 10000, int trickle = 0,
                         int pause_ms = 0);

/// The status code of an HTTP response's status line; 0 when there is none.
int status_of_response(const std::string& response);

}  // namespace mold::test
