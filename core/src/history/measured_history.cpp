#include "mold/history/measured_history.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"
#include "mold/base/untrusted_json.hpp"
#include "mold/runtime/event_json.hpp"

namespace mold {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr int kVersion = 1;
/// Phases kept in memory (a file read from its last max_bytes holds fewer).
constexpr std::size_t kMaxPhases = 20000;
constexpr std::size_t kMaxBases = 16;
constexpr std::size_t kMaxByLength = 64;
/// Bytes a peak may be: far beyond any device, small enough for a double.
constexpr Bytes kMaxPeak = Bytes(1) << 52;

/// A file descriptor closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string system_error(int error) { return std::strerror(error); }

std::string type_of(const struct stat& st) {
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

/// Holds FILE.lock exclusively while it lives; waits at most two seconds
/// for another process to let it go (then locked() is false).
class FileLock {
 public:
  explicit FileLock(const fs::path& file)
      : fd_(::open((file.string() + ".lock").c_str(),
                   O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644)) {
    if (fd_.fd < 0) {
      problem_ = fmt::format("cannot open {}.lock: {}", file.string(),
                             system_error(errno));
      return;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (::flock(fd_.fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        problem_ = fmt::format("cannot lock {}.lock: {}", file.string(),
                               system_error(errno));
        return;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        problem_ = fmt::format(
            "{}.lock stayed locked by another process for 2 s", file.string());
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    locked_ = true;
  }
  ~FileLock() {
    if (locked_) ::flock(fd_.fd, LOCK_UN);
  }
  bool locked() const { return locked_; }
  const std::string& problem() const { return problem_; }

 private:
  Fd fd_;
  bool locked_ = false;
  std::string problem_;
};

/// The last `max_bytes` of a regular file, from its first whole line;
/// sets `problem` and returns "" when it is not one or cannot be read.
std::string read_tail(const fs::path& file, std::uintmax_t max_bytes,
                      std::string& problem) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.fd < 0) {
    if (errno != ENOENT)
      problem =
          fmt::format("cannot read {}: {}", file.string(), system_error(errno));
    return {};
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) {
    problem =
        fmt::format("cannot read {}: {}", file.string(), system_error(errno));
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    problem = fmt::format(
        "{} is {}, not a history file: remove it to let mold learn again",
        file.string(), type_of(st));
    return {};
  }
  const std::uintmax_t size = std::uintmax_t(st.st_size);
  const std::uintmax_t from = size > max_bytes ? size - max_bytes : 0;
  std::string text(std::size_t(size - from), '\0');
  try {
    if (!text.empty()) read_at(fd.fd, text.data(), text.size(), from);
  } catch (const Error& e) {
    problem = fmt::format("cannot read {}: {}", file.string(), e.what());
    return {};
  }
  if (from > 0) {  // the first line is cut
    const auto newline = text.find('\n');
    text.erase(0, newline == std::string::npos ? text.size() : newline + 1);
  }
  return text;
}

std::string slug(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (plain)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.'))
    out.pop_back();
  while (!out.empty() && out.front() == '.') out.erase(0, 1);
  if (out.size() > 80) out.resize(80);
  return out.empty() ? "unnamed" : out;
}

}  // namespace

bool learns_from(const Workload& measured, const Workload& workload) {
  return measured.family == workload.family &&
         measured.model == workload.model && measured.op == workload.op &&
         measured.arch == workload.arch &&
         measured.quantized == workload.quantized &&
         measured.backend == workload.backend;
}

fs::path MeasuredHistory::default_directory() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state)
    return fs::path(state) / "mold" / "history";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local" / "state" / "mold" / "history";
  return {};
}

std::optional<std::pair<std::string, std::string>> MeasuredHistory::owner(
    const fs::path& file) {
  std::string problem;
  const std::string text = read_tail(file, kDefaultMaxBytes * 8, problem);
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end - start <= kMaxLineBytes) {
      const Json j = parse_untrusted_json(
          std::string_view(text.data() + start, end - start));
      if (j.is_object() && j.contains("backend") && j.contains("device") &&
          j["backend"].is_string() && j["device"].is_string())
        return std::make_pair(j["backend"].get<std::string>(),
                              j["device"].get<std::string>());
    }
    start = end + 1;
  }
  return std::nullopt;
}

fs::path MeasuredHistory::file_for(const fs::path& directory,
                                   const std::string& backend,
                                   const std::string& device) {
  return directory / (slug(backend) + "-" + slug(device) + ".jsonl");
}

MeasuredHistory::MeasuredHistory(fs::path file, std::string backend,
                                 std::string device, std::uintmax_t max_bytes)
    : file_(std::move(file)),
      backend_(std::move(backend)),
      device_(std::move(device)),
      max_bytes_(std::max<std::uintmax_t>(max_bytes, 4 * kMaxLineBytes)) {
  read_file();
}

std::string MeasuredHistory::line_of(const MeasuredPhase& phase) const {
  Json bases = Json::array();
  for (const auto& [name, basis] : phase.bases) bases.push_back({name, basis});
  const Json line = {{"v", kVersion},
                     {"backend", backend_},
                     {"device", device_},
                     {"time", phase.time},
                     {"by", phase.by},
                     {"kind", phase.lower_bound ? "lower_bound" : "measured"},
                     {"peak", phase.peak},
                     {"unfitted", phase.unfitted},
                     {"bases", std::move(bases)},
                     {"workload", workload_object(phase.workload)}};
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

/// The phase of one line, or false when the line is not one of `backend`
/// and `device` in this version.
bool parse_line(std::string_view text, const std::string& backend,
                const std::string& device, MeasuredPhase& out) {
  const Json j = parse_untrusted_json(text);
  if (j.is_discarded() || !j.is_object()) return false;
  auto string_of = [&](const char* key) -> const std::string* {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>()
                                            : nullptr;
  };
  auto count_of = [&](const char* key, std::uint64_t max) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned())
      throw ParseError(std::string(key) + " is not a count");
    const auto value = it->get<std::uint64_t>();
    if (value > max) throw ParseError(std::string(key) + " is out of range");
    return value;
  };
  const auto version = j.find("v");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<std::int64_t>() != kVersion)
    return false;
  const std::string* line_backend = string_of("backend");
  const std::string* line_device = string_of("device");
  const std::string* kind = string_of("kind");
  const std::string* by = string_of("by");
  if (!line_backend || *line_backend != backend || !line_device ||
      *line_device != device || !kind ||
      (*kind != "measured" && *kind != "lower_bound") || !by ||
      by->size() > kMaxByLength)
    return false;
  try {
    if (!j.contains("workload")) return false;
    out.workload = parse_workload_object(j["workload"]);
    out.workload.validate();
    if (out.workload.backend != backend) return false;
    out.peak = count_of("peak", kMaxPeak);
    out.unfitted = count_of("unfitted", kMaxPeak);
    out.time = std::int64_t(count_of("time", std::uint64_t(1) << 40));
  } catch (const Error&) {
    return false;
  }
  out.lower_bound = *kind == "lower_bound";
  out.by = *by;
  const auto bases = j.find("bases");
  if (bases == j.end() || !bases->is_array() || bases->size() > kMaxBases)
    return false;
  out.bases.clear();
  for (const Json& base : *bases) {
    if (!base.is_array() || base.size() != 2 || !base[0].is_string() ||
        !base[1].is_number())
      return false;
    const double basis = base[1].get<double>();
    const auto& name = base[0].get_ref<const std::string&>();
    if (!std::isfinite(basis) || basis < 0 || name.empty() ||
        name.size() > kMaxByLength)
      return false;
    out.bases.emplace_back(name, basis);
  }
  return true;
}

/// The phases of `text`, line by line; counts the lines skipped.
std::vector<MeasuredPhase> parse_lines(const std::string& text,
                                       const std::string& backend,
                                       const std::string& device,
                                       std::size_t& skipped) {
  std::vector<MeasuredPhase> phases;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    MeasuredPhase phase;
    if (line.size() <= MeasuredHistory::kMaxLineBytes &&
        parse_line(line, backend, device, phase))
      phases.push_back(std::move(phase));
    else
      ++skipped;
  }
  return phases;
}

}  // namespace

void MeasuredHistory::read_file() {
  if (file_.empty()) return;
  const std::string text = read_tail(file_, max_bytes_, problem_);
  phases_ = parse_lines(text, backend_, device_, skipped_);
  if (phases_.size() > kMaxPhases)
    phases_.erase(phases_.begin(), phases_.end() - kMaxPhases);
}

std::vector<MeasuredPhase> MeasuredHistory::phases() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return phases_;
}

std::vector<MeasuredPhase> MeasuredHistory::phases_like(
    const Workload& workload) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<MeasuredPhase> like;
  for (const auto& phase : phases_)
    if (learns_from(phase.workload, workload)) like.push_back(phase);
  return like;
}

std::size_t MeasuredHistory::skipped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

std::string MeasuredHistory::problem() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return problem_;
}

std::string MeasuredHistory::rewrite_under_lock(
    const std::vector<MeasuredPhase>& phases) {
  std::string problem;
  try {
    write_file_atomically(file_, "the memory history", [&](std::ostream& out) {
      for (const auto& phase : phases) out << line_of(phase) << '\n';
    });
  } catch (const Error& e) {
    problem = e.what();
  }
  return problem;
}

void MeasuredHistory::append(MeasuredPhase phase) {
  phase.workload.validate();
  if (phase.workload.backend != backend_)
    throw InvalidArgument(fmt::format(
        "a phase measured on {} does not belong in the {} history of {}",
        phase.workload.backend, backend_, device_));
  if (phase.peak > kMaxPeak)
    throw InvalidArgument(fmt::format("a measured peak of {} B is past {} B",
                                      phase.peak, kMaxPeak));
  if (phase.time == 0)
    phase.time = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  const std::string line = line_of(phase) + '\n';
  std::lock_guard<std::mutex> lock(mutex_);
  phases_.push_back(std::move(phase));
  if (phases_.size() > kMaxPhases) phases_.erase(phases_.begin());
  if (file_.empty()) return;

  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  FileLock file_lock(file_);
  if (!file_lock.locked()) {
    problem_ = file_lock.problem();
    return;
  }
  Fd fd(::open(file_.c_str(),
               O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644));
  struct stat st {};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0) {
    problem_ =
        fmt::format("cannot write {}: {}", file_.string(), system_error(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    problem_ = fmt::format(
        "{} is {}, not a history file: remove it to let mold learn again",
        file_.string(), type_of(st));
    return;
  }
  const std::uintmax_t size = std::uintmax_t(st.st_size);
  if (size + line.size() > max_bytes_) {
    // Past the bound: the newest half of what the file holds (every
    // process's lines, read under the lock), then this one.
    std::string read_problem;
    std::size_t skipped = 0;
    auto kept = parse_lines(read_tail(file_, max_bytes_ / 2, read_problem),
                            backend_, device_, skipped);
    kept.push_back(phases_.back());
    if (const auto problem = rewrite_under_lock(kept); !problem.empty())
      problem_ = problem;
    return;
  }
  std::string text = line;
  if (size > 0) {  // a line cut short by a crash is not glued to this one
    char last = '\n';
    if (::pread(fd.fd, &last, 1, off_t(size - 1)) == 1 && last != '\n')
      text.insert(text.begin(), '\n');
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n =
        ::write(fd.fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      problem_ = fmt::format("cannot write {}: {}", file_.string(),
                             system_error(errno));
      // No half line left behind for the next reader.
      if (::ftruncate(fd.fd, off_t(size)) != 0) {
      }
      return;
    }
    written += std::size_t(n);
  }
}

std::size_t MeasuredHistory::prune(
    const std::function<bool(const MeasuredPhase&)>& keep) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t dropped = 0;
  if (file_.empty()) {
    const auto before = phases_.size();
    phases_.erase(
        std::remove_if(phases_.begin(), phases_.end(),
                       [&](const MeasuredPhase& p) { return !keep(p); }),
        phases_.end());
    return before - phases_.size();
  }
  FileLock file_lock(file_);
  if (!file_lock.locked()) throw Error(file_lock.problem());
  std::string problem;
  std::size_t skipped = 0;
  auto all = parse_lines(read_tail(file_, max_bytes_, problem), backend_,
                         device_, skipped);
  if (!problem.empty()) throw Error(problem);
  std::vector<MeasuredPhase> kept;
  for (auto& phase : all)
    if (keep(phase))
      kept.push_back(std::move(phase));
    else
      ++dropped;
  if (const auto failed = rewrite_under_lock(kept); !failed.empty())
    throw Error(failed);
  phases_ = std::move(kept);
  skipped_ = 0;
  return dropped;
}

}  // namespace mold
