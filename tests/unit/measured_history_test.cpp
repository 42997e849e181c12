// The measured history: lines in, lines out, and a file that is corrupt,
// truncated, huge, a FIFO or written by two processes at once never breaks
// a run nor loses the other lines.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/history/measured_history.hpp>
#include <string>

#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::MeasuredHistory;
using mold::MeasuredPhase;
using mold::test::TempDir;

namespace {

MeasuredPhase phase(int tokens, mold::Bytes peak, std::string by = "test") {
  MeasuredPhase p;
  p.workload.family = "zimage";
  p.workload.model = "z-image-turbo";
  p.workload.op = "denoise";
  p.workload.backend = "cpu";
  p.workload.dtype = "float32";
  p.workload.arch = "tiny";
  p.workload.width = p.workload.height = 64;
  p.workload.tokens = tokens;
  p.peak = peak;
  p.unfitted = 16;
  p.bases = {{"bytes_per_token", 1.5 * tokens}, {"fixed_bytes", 1}};
  p.by = std::move(by);
  return p;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("history: what is appended is read back, in a folder made for it",
          "[history]") {
  TempDir dir;
  const fs::path file = MeasuredHistory::file_for(
      fs::path(dir.path()) / "state" / "mold" / "history", "cpu",
      "AMD EPYC 7B13 (64-Core)");
  CHECK(file.filename() == "cpu-AMD-EPYC-7B13-64-Core.jsonl");
  {
    MeasuredHistory history(file, "cpu", "AMD EPYC");
    CHECK(history.phases().empty());
    history.append(phase(10, 1000));
    MeasuredPhase bound = phase(20, 5000);
    bound.lower_bound = true;
    history.append(bound);
    CHECK(history.problem().empty());
  }
  MeasuredHistory again(file, "cpu", "AMD EPYC");
  const auto phases = again.phases();
  REQUIRE(phases.size() == 2);
  CHECK(phases[0].workload.tokens == 10);
  CHECK(phases[0].workload.arch == "tiny");
  CHECK(phases[0].peak == 1000);
  CHECK(phases[0].unfitted == 16);
  CHECK(phases[0].bases.size() == 2);
  CHECK(phases[0].bases[0].second == Approx(15));
  CHECK(phases[0].by == "test");
  CHECK(phases[0].time > 0);
  CHECK_FALSE(phases[0].lower_bound);
  CHECK(phases[1].lower_bound);
  CHECK(again.skipped() == 0);
  // Another device's file is another file; a phase of another backend is
  // refused by name.
  MeasuredPhase cuda = phase(10, 1);
  cuda.workload.backend = "cuda";
  CHECK_THROWS_AS(again.append(cuda), mold::InvalidArgument);
  CHECK(again.phases_like(phases[0].workload).size() == 2);
  mold::Workload other = phases[0].workload;
  other.model = "other";
  CHECK(again.phases_like(other).empty());
}

TEST_CASE("history: corrupt, foreign and cut lines are skipped and counted",
          "[history]") {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "h.jsonl";
  std::string good;
  {
    MeasuredHistory writer(file, "cpu", "dev");
    good = writer.line_of(phase(12, 1200));
  }
  std::string text = good + "\n";
  text += "not json at all\n";
  text += std::string(200000, '[') + "\n";  // deeper than any parser allows
  text += "{\"v\":2}\n";                    // another version
  text += good.substr(0, good.size() / 2) + "\n";  // cut
  std::string foreign = good;
  foreign.replace(foreign.find("\"dev\""), 5, "\"gpu\"");
  text += foreign + "\n";  // another device's
  std::string negative = good;
  negative.replace(negative.find("\"peak\":1200"), 11, "\"peak\":-5");
  text += negative + "\n";
  text += std::string(20000, 'x') + "\n";  // longer than a line can be
  text += good;                            // no newline: a crash cut it here
  std::ofstream(file, std::ios::binary) << text;
  MeasuredHistory history(file, "cpu", "dev");
  CHECK(history.phases().size() == 2);
  CHECK(history.skipped() == 7);
  // The next line is not glued to the one the crash left unfinished.
  history.append(phase(13, 1300));
  MeasuredHistory again(file, "cpu", "dev");
  CHECK(again.phases().size() == 3);
  CHECK(again.phases().back().workload.tokens == 13);
}

TEST_CASE("history: a FIFO or a folder in its place never hangs nor fails",
          "[history]") {
  TempDir dir;
  const fs::path fifo = fs::path(dir.path()) / "fifo.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  MeasuredHistory history(fifo, "cpu", "dev");
  CHECK_THAT(history.problem(), Catch::Contains("a FIFO"));
  history.append(phase(10, 100));  // kept in memory, the FIFO left alone
  CHECK(history.phases().size() == 1);
  CHECK(fs::is_fifo(fifo));
  const fs::path folder = fs::path(dir.path()) / "folder.jsonl";
  fs::create_directories(folder);
  MeasuredHistory in_folder(folder, "cpu", "dev");
  CHECK_THAT(in_folder.problem(), Catch::Contains("a directory"));
  in_folder.append(phase(10, 100));
  CHECK(fs::is_directory(folder));
}

TEST_CASE(
    "history: a huge file is read from its end, and the file stays "
    "bounded, the newest lines kept",
    "[history]") {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "h.jsonl";
  const std::uintmax_t bound = 64u << 10;
  std::string line;
  {
    MeasuredHistory writer(file, "cpu", "dev", bound);
    line = writer.line_of(phase(1, 1)) + "\n";
  }
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 40000; ++i) out << line;  // ~16 MB
  }
  MeasuredHistory huge(file, "cpu", "dev", bound);
  CHECK(huge.problem().empty());
  CHECK(huge.phases().size() <= bound / line.size() + 1);
  CHECK(huge.phases().size() >= bound / line.size() - 2);
  fs::remove(file);
  MeasuredHistory history(file, "cpu", "dev", bound);
  for (int i = 1; i <= 600; ++i) history.append(phase(i, mold::Bytes(i)));
  CHECK(fs::file_size(file) <= bound);
  MeasuredHistory again(file, "cpu", "dev", bound);
  const auto phases = again.phases();
  REQUIRE(!phases.empty());
  CHECK(phases.back().workload.tokens == 600);
  CHECK(phases.size() > 50);
  for (std::size_t i = 1; i < phases.size(); ++i)
    CHECK(phases[i].workload.tokens == phases[i - 1].workload.tokens + 1);
  CHECK(again.skipped() == 0);
}

TEST_CASE("history: two processes appending at once lose no line",
          "[history]") {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "h.jsonl";
  const int per_process = 150;
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int status = 0;
      try {
        MeasuredHistory history(file, "cpu", "dev");
        for (int i = 0; i < per_process; ++i)
          history.append(phase(1 + child * 1000 + i, 1, "child"));
        if (!history.problem().empty()) status = 2;
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  MeasuredHistory history(file, "cpu", "dev");
  CHECK(history.skipped() == 0);
  CHECK(history.phases().size() == std::size_t(2 * per_process));
}

TEST_CASE("history: prune keeps what it is told to and rewrites the file",
          "[history]") {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "h.jsonl";
  MeasuredHistory history(file, "cpu", "dev");
  history.append(phase(1, 1, "mold run"));
  history.append(phase(2, 2, "mold serve"));
  history.append(phase(3, 3, "mold run"));
  std::ofstream(file, std::ios::app) << "garbage\n";
  const auto dropped =
      history.prune([](const MeasuredPhase& p) { return p.by == "mold run"; });
  CHECK(dropped == 1);
  CHECK(history.phases().size() == 2);
  MeasuredHistory again(file, "cpu", "dev");
  CHECK(again.phases().size() == 2);
  CHECK(again.skipped() == 0);
  CHECK(slurp(file).find("mold serve") == std::string::npos);
}
