#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "support/paths.hpp"

extern char** environ;

namespace mold::test {

namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}
}  // namespace

std::vector<std::string> environment_with(
    const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos)
      merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : env) {
    if (value == kUnset)
      merged.erase(key);
    else
      merged[key] = value;
  }
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : merged)
    env_strings.push_back(key + "=" + value);
  return env_strings;
}

ProcessResult run_process(const std::string& program,
                          const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env,
                          const std::string& input) {
  TempDir io;
  const std::string in_path = io.write("stdin", input);
  const std::string out_path = io.path() + "/stdout";
  const std::string err_path = io.path() + "/stderr";

  std::vector<std::string> env_strings = environment_with(env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> argv_strings{program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr,
                             argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start " + program + ": " +
                             std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  ProcessResult result;
  result.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

TempDir::TempDir() {
  std::string templ = (fs::temp_directory_path() / "mold-test-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name,
                           const std::string& content) const {
  const fs::path file = fs::path(path_) / name;
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << content;
  return file.string();
}

std::map<std::string, std::string> isolated_env(const TempDir& home) {
  return {{"HOME", home.path()},
          {"XDG_CONFIG_HOME", home.path() + "/config"},
          {"XDG_CACHE_HOME", home.path() + "/cache"},
          {"XDG_DATA_HOME", home.path() + "/data"},
          {"XDG_STATE_HOME", home.path() + "/state"},
          {"MOLD_CONFIG", kUnset},
          {"MOLD_MODELS_DIR", kUnset},
          {"MOLD_HOST", kUnset},
          {"MOLD_API_KEY", kUnset},
          {"MOLD_CLIENT_PLATFORM", kUnset},
          {"MOLD_PLUGIN_PATH", kUnset}};
}

std::map<std::string, std::string> measured_memory_env() {
  const char* current = std::getenv("ASAN_OPTIONS");
  std::string options = current ? current : "";
  options += std::string(options.empty() ? "" : ":") +
             "quarantine_size_mb=0:detect_leaks=0";
  return {{"ASAN_OPTIONS", options}};
}

ProcessResult run_molddiag(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& extra_env) {
  static TempDir home;
  auto env = isolated_env(home);
  const TempDir state;  // each run learns from no other's measurements
  env["XDG_STATE_HOME"] = state.path();
  for (const auto& [key, value] : extra_env) env[key] = value;
  return run_process(kMolddiag, args, env);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ProcessResult run_molddiag_measured(const std::vector<std::string>& args) {
  return run_molddiag(args, measured_memory_env());
}

ProcessResult run_mold(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& extra_env) {
  static TempDir home;
  auto env = isolated_env(home);
  const TempDir state;  // each run learns from no other's measurements
  env["XDG_STATE_HOME"] = state.path();
  for (const auto& [key, value] : extra_env) env[key] = value;
  return run_process(kMold, args, env);
}

}  // namespace mold::test
