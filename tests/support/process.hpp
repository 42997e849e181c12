#pragma once
// Runs a real binary for CLI tests: arguments, extra environment, captured
// output.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace mold::test {

struct ProcessResult {
  int exit_code = -1;  ///< the exit status; 128 + signal when killed by one
  std::string out;
  std::string err;
};

/// Runs `program` with `args`, the current environment changed by `env` (a
/// value of
/// "\x01unset" removes the variable), and `input` on stdin. Never throws for a
/// failing program; throws std::runtime_error when it cannot be started.
ProcessResult run_process(const std::string& program,
                          const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& input = "");

/// The current environment changed by `env` (as run_process applies it), as
/// "KEY=VALUE" strings.
std::vector<std::string> environment_with(
    const std::map<std::string, std::string>& env);

/// The value that removes a variable in run_process's `env`.
inline const std::string kUnset = "\x01unset";

/// A fresh empty directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `content` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

/// Environment that isolates a run from the user's own config and plugin path.
std::map<std::string, std::string> isolated_env(const TempDir& home);

/// The bytes of the file at `path`; empty when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// The environment for a run whose process memory is measured (molddiag
/// leak on planted faults): under AddressSanitizer, freed memory is
/// quarantined (the resident set then grows whatever the code does) and the
/// faults' deliberate leaks would fail the run at exit, so both are turned
/// off for it, on top of the ASAN_OPTIONS in force. Empty options elsewhere
/// change nothing.
std::map<std::string, std::string> measured_memory_env();

/// Runs the real molddiag with `args` in isolated_env() of a home shared by
/// the calls of one test executable, `extra_env` added on top. Each call
/// has a state folder of its own (XDG_STATE_HOME: the measured history), so
/// that no run's estimates learn from another test's runs; a test that
/// wants them to sets XDG_STATE_HOME itself.
ProcessResult run_molddiag(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& extra_env = {});

/// run_molddiag with measured_memory_env() added.
ProcessResult run_molddiag_measured(const std::vector<std::string>& args);

/// Runs the real mold CLI likewise.
ProcessResult run_mold(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& extra_env = {});

}  // namespace mold::test
