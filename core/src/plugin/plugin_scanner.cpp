#include "mold/plugin/plugin_scanner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <utility>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/base/untrusted_json.hpp"
#include "mold/plugin/plugin.hpp"
#include "mold/plugin/plugin_loader.hpp"
#include "mold/plugin/registry.hpp"

namespace mold {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kCacheVersion = 1;

// Fields of a cache that may have been written by anything: a field of the
// wrong type reads as absent, never as an exception.
std::string text_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>()
                                          : std::string();
}
template <class Number>
Number number_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<Number>()
                                                  : Number(0);
}
bool bool_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

/// The first `limit` bytes of what a plugin wrote, on one line and escaped:
/// shown, never replayed to the terminal.
std::string shown_output(const std::string& text, std::size_t limit) {
  std::string out;
  for (const char c : escape_control(text.substr(0, limit)))
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  if (text.size() > limit) out += "...";
  return out;
}

std::string signal_name(int signal) {
  const char* description = strsignal(signal);
  return fmt::format("signal {} ({})", signal,
                     description ? description : "unknown");
}

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += std::size_t(n);
  }
}

/// The child: loads `library` into a registry of its own with output going
/// to `output_fd`, reports on `report_fd` and leaves with _exit, so that none
/// of the parent's exit handlers run twice.
[[noreturn]] void run_child(const fs::path& library,
                            const fs::path& user_data_dir, int output_fd,
                            int report_fd) {
  // A crash is the plugin's: no handler inherited from the parent (a
  // sanitizer's, a crash reporter's) may turn it into an exit code.
  for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    ::signal(signal, SIG_DFL);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  nlohmann::json report;
  try {
    Registry registry;
    PluginLoader loader(registry, user_data_dir);
    const bool loaded = loader.load_file(library);
    // Push whatever the plugin buffered into the output pipe.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    report["loaded"] = loaded;
    if (loaded) {
      const PluginRecord& record = registry.plugins().back();
      report["name"] = record.name;
      report["registered"] = record.registered;
    } else {
      const LoadError& error = registry.load_errors().back();
      report["kind"] = std::string(to_string(error.kind));
      report["message"] = error.message;
    }
  } catch (...) {
    ::_exit(70);  // a scan that could not run at all
  }
  write_all(report_fd, report.dump(-1, ' ', false,
                                   nlohmann::json::error_handler_t::replace));
  ::_exit(0);
}

/// Reads what is available on `fd` into `into`; false at end of file.
bool drain(int fd, std::string& into) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      if (into.size() < (1u << 20)) into.append(buffer, std::size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

PluginScanVerdict scan_in_child(const fs::path& library,
                                const PluginScanOptions& options) {
  PluginScanVerdict verdict;
  auto fail = [&](LoadErrorKind kind, std::string message) {
    verdict.safe = false;
    verdict.error = LoadError{library, kind, std::move(message)};
    return verdict;
  };
  int output[2], report[2];
  if (::pipe2(output, O_CLOEXEC) != 0) {
    verdict.safe = true;  // no scan possible: the loader's own checks remain
    return verdict;
  }
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(output[0]);
    ::close(output[1]);
    verdict.safe = true;
    return verdict;
  }
  // Nothing the parent buffered may reach the child's output.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(output[0]);
    ::close(report[0]);
    run_child(library, options.user_data_dir, output[1], report[1]);
  }
  ::close(output[1]);
  ::close(report[1]);
  if (pid < 0) {
    ::close(output[0]);
    ::close(report[0]);
    verdict.safe = true;
    return verdict;
  }
  ::fcntl(output[0], F_SETFL, O_NONBLOCK);
  ::fcntl(report[0], F_SETFL, O_NONBLOCK);

  const auto deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(options.timeout);
  std::string written, reported;
  bool output_open = true, report_open = true, exited = false,
       timed_out = false;
  int status = 0;
  while (!exited) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{output[0], POLLIN, 0}, {report[0], POLLIN, 0}};
    ::poll(fds, 2, int(std::min<long long>(left.count(), 20)));
    if (output_open) output_open = drain(output[0], written);
    if (report_open) report_open = drain(report[0], reported);
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) exited = true;
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else {
    drain(output[0], written);
    drain(report[0], reported);
  }
  ::close(output[0]);
  ::close(report[0]);

  const std::string path = library.string();
  if (timed_out)
    return fail(LoadErrorKind::timed_out,
                fmt::format("{}: loading it did not finish within {:g} s (it "
                            "hangs in a static constructor, its entry point or "
                            "register_all); it was not loaded. Fix or remove "
                            "the plugin, or raise [plugins] scan_timeout",
                            path, options.timeout.count()));
  if (WIFSIGNALED(status))
    return fail(LoadErrorKind::crashed,
                fmt::format("{}: loading it crashed with {} (in a static "
                            "constructor, its entry point or register_all); it "
                            "was not loaded. Rebuild the plugin against this "
                            "mold SDK, or remove it",
                            path, signal_name(WTERMSIG(status))));
  nlohmann::json parsed;
  if (!reported.empty()) parsed = mold::parse_untrusted_json(reported);
  const bool has_report = parsed.is_object();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !has_report) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 70 && !has_report) {
      verdict.safe =
          true;  // the scan itself failed: nothing to hold against it
      return verdict;
    }
    return fail(LoadErrorKind::exited,
                fmt::format("{}: loading it ended the process with exit code "
                            "{} (the plugin calls exit() in a static "
                            "constructor, its entry point or register_all); it "
                            "was not loaded. Fix or remove the plugin",
                            path, code));
  }
  if (!written.empty())
    return fail(
        LoadErrorKind::wrote_output,
        fmt::format("{}: loading it wrote to stdout or stderr (\"{}\"), "
                    "which would corrupt mold's output (--json); it was "
                    "not loaded. A plugin must stay silent while it "
                    "loads",
                    path, shown_output(written, 120)));
  verdict.safe = true;
  if (bool_field(parsed, "loaded")) {
    verdict.name = text_field(parsed, "name");
    if (parsed.contains("registered") && parsed["registered"].is_array())
      for (const auto& item : parsed["registered"])
        if (item.is_string()) verdict.registered.push_back(item);
  }
  return verdict;
}

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

PluginScanner::PluginScanner(PluginScanOptions options)
    : options_(std::move(options)) {
  load_cache();
}

PluginScanner::~PluginScanner() { save(); }

fs::path PluginScanner::default_cache_file() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "mold" / "plugins.json";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "mold" / "plugins.json";
  return {};
}

void PluginScanner::load_cache() {
  if (options_.cache_file.empty()) return;
  // A corrupt, foreign, oversized or non-regular cache (a FIFO, a link to
  // /dev/zero) is rebuilt, never fatal: a cache of hundreds of plugins is
  // tens of KiB.
  std::string text;
  try {
    text = read_regular_file(options_.cache_file, std::uintmax_t(16) << 20,
                             "the plugin cache");
  } catch (const Error&) {
    dirty_ = true;
    return;
  }
  const nlohmann::json cache = mold::parse_untrusted_json(text);
  if (!cache.is_object() ||
      number_field<int>(cache, "version") != kCacheVersion ||
      text_field(cache, "core_build_id") != core_build_id() ||
      !cache.contains("plugins") || !cache["plugins"].is_object()) {
    dirty_ = true;
    return;
  }
  for (const auto& [path, item] : cache["plugins"].items()) {
    if (!item.is_object()) continue;
    Entry entry;
    entry.size = number_field<std::uintmax_t>(item, "size");
    entry.mtime_ns = number_field<std::int64_t>(item, "mtime_ns");
    entry.verdict.safe = bool_field(item, "safe");
    entry.verdict.name = text_field(item, "name");
    if (item.contains("registered") && item["registered"].is_array())
      for (const auto& r : item["registered"])
        if (r.is_string()) entry.verdict.registered.push_back(r);
    if (!entry.verdict.safe) {
      const auto kind = load_error_kind_from_string(text_field(item, "kind"));
      if (!kind) continue;
      entry.verdict.error = LoadError{path, *kind, text_field(item, "message")};
    }
    entries_[path] = std::move(entry);
  }
}

bool PluginScanner::save() {
  if (!dirty_ || options_.cache_file.empty()) return true;
  nlohmann::json cache = {{"version", kCacheVersion},
                          {"core_build_id", core_build_id()},
                          {"plugins", nlohmann::json::object()}};
  for (const auto& [path, entry] : entries_) {
    nlohmann::json item = {{"size", entry.size},
                           {"mtime_ns", entry.mtime_ns},
                           {"safe", entry.verdict.safe},
                           {"name", entry.verdict.name},
                           {"registered", entry.verdict.registered}};
    if (entry.verdict.error) {
      item["kind"] = std::string(to_string(entry.verdict.error->kind));
      item["message"] = entry.verdict.error->message;
    }
    cache["plugins"][path] = item;
  }
  std::error_code ec;
  fs::create_directories(options_.cache_file.parent_path(), ec);
  const fs::path temporary =
      options_.cache_file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << cache.dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    if (!out) {
      fs::remove(temporary, ec);
      return false;
    }
  }
  fs::rename(temporary, options_.cache_file, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return false;
  }
  dirty_ = false;
  return true;
}

PluginScanVerdict PluginScanner::scan(const fs::path& library) {
  std::error_code ec;
  fs::path key_path = fs::weakly_canonical(library, ec);
  if (ec) key_path = library;
  const std::string key = key_path.string();
  struct stat st {};
  const bool stat_ok = ::stat(library.c_str(), &st) == 0;
  if (stat_ok) {
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.size == std::uintmax_t(st.st_size) &&
        it->second.mtime_ns == mtime_ns(st)) {
      PluginScanVerdict verdict = it->second.verdict;
      verdict.from_cache = true;
      if (verdict.error) {
        verdict.error->path = library;
        verdict.error->message +=
            fmt::format(" (remembered in {}: replacing the file rescans it)",
                        options_.cache_file.string());
      }
      return verdict;
    }
  }
  PluginScanVerdict verdict = scan_in_child(library, options_);
  if (stat_ok) {
    entries_[key] = Entry{std::uintmax_t(st.st_size), mtime_ns(st), verdict};
    dirty_ = true;
  }
  return verdict;
}

}  // namespace mold
