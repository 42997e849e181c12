// Outputs never replace what is not a regular file, follow symlinks and keep
// modes; inputs that are not regular files are refused at once (a FIFO would
// block forever). Special files are made in a temp dir, never under /dev.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <sstream>
#include <string>

#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::TempDir;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_hello(const fs::path& path) {
  mold::write_file_atomically(path, "--output",
                              [](std::ostream& out) { out << "hello"; });
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("an atomic write creates, replaces and keeps the mode",
          "[unit][io]") {
  TempDir dir;
  const fs::path file = dir.path() + "/out.bin";
  write_hello(file);
  CHECK(read(file) == "hello");
  ::chmod(file.c_str(), 0640);
  mold::write_file_atomically(file, "--output",
                              [](std::ostream& out) { out << "again"; });
  CHECK(read(file) == "again");
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(entries(dir.path()) == 1);  // no temporary left
}

TEST_CASE("an atomic write follows a symlink and replaces its target",
          "[unit][io]") {
  TempDir dir;
  const fs::path target = dir.path() + "/real.bin";
  const fs::path link = dir.path() + "/link.bin";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("real.bin", link);
  write_hello(link);
  CHECK(fs::is_symlink(link));
  CHECK(read(target) == "hello");
  // A dangling link is followed too: its target is created.
  const fs::path dangling = dir.path() + "/dangling.bin";
  fs::create_symlink("new.bin", dangling);
  write_hello(dangling);
  CHECK(fs::is_symlink(dangling));
  CHECK(read(dir.path() + "/new.bin") == "hello");
}

TEST_CASE("an atomic write refuses a FIFO, a directory, a socket and a device",
          "[unit][io]") {
  TempDir dir;
  std::vector<std::pair<fs::path, std::string>> specials;
  const fs::path fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  specials.push_back({fifo, "a FIFO"});
  const fs::path subdir = dir.path() + "/dir";
  fs::create_directory(subdir);
  specials.push_back({subdir, "a directory"});
  const fs::path socket_path = dir.path() + "/socket";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s",
                socket_path.c_str());
  if (fd >= 0 &&
      ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
    specials.push_back({socket_path, "a socket"});
  const fs::path device = dir.path() + "/null";  // a character device, as root
  if (::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0)
    specials.push_back({device, "a character device"});
  // Through a symlink as well: the link's target decides.
  const fs::path link = dir.path() + "/link-to-fifo";
  fs::create_symlink("fifo", link);
  specials.push_back({link, "a FIFO"});

  for (const auto& [path, type] : specials) {
    INFO(path.string());
    const auto before = fs::symlink_status(path).type();
    CHECK_THROWS_WITH(write_hello(path), Catch::Contains(type) &&
                                             Catch::Contains("refusing") &&
                                             Catch::Contains(path.string()));
    CHECK(fs::symlink_status(path).type() == before);  // untouched
    CHECK(mold::describe_file_type(path) == type);
  }
  if (fd >= 0) ::close(fd);
  // Nothing was left beside them.
  for (const auto& e : fs::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("a failed write leaves the old file and no temporary", "[unit][io]") {
  TempDir dir;
  const fs::path file = dir.path() + "/out.bin";
  { std::ofstream(file) << "precious"; }
  CHECK_THROWS_WITH(
      mold::write_file_atomically(
          file, "--output",
          [](std::ostream&) { throw mold::Error("the run failed"); }),
      "the run failed");
  CHECK(read(file) == "precious");
  CHECK(entries(dir.path()) == 1);
  // A directory that does not exist names the path.
  CHECK_THROWS_WITH(write_hello(dir.path() + "/missing/out.bin"),
                    Catch::Contains("cannot create a file beside it"));
}

TEST_CASE("inputs that are not regular files are refused at once",
          "[unit][io]") {
  TempDir dir;
  const fs::path fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A blocking open of a FIFO without a writer would hang here.
  CHECK_THROWS_WITH(mold::require_regular_input(fifo, "--input"),
                    Catch::Contains("--input") && Catch::Contains("a FIFO") &&
                        Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(mold::require_regular_input(dir.path(), "--input"),
                    Catch::Contains("a directory"));
  CHECK_THROWS_WITH(
      mold::require_regular_input(dir.path() + "/none", "--input"),
      Catch::Contains("No such file or directory"));
  CHECK(mold::describe_file_type(dir.path() + "/none") == "missing");
}

TEST_CASE("a bounded read takes regular files within the bound only",
          "[unit][io]") {
  TempDir dir;
  const fs::path small = dir.write("small.txt", "abc\n");
  CHECK(mold::read_regular_file(small, 4, "the file") == "abc\n");
  CHECK_THROWS_WITH(mold::read_regular_file(small, 3, "--points-from"),
                    Catch::Contains("--points-from") &&
                        Catch::Contains("is 4 bytes, more than the 3"));
  const fs::path fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without blocking: no writer is waited for.
  CHECK_THROWS_WITH(
      mold::read_regular_file(fifo, 100, "refs/main"),
      Catch::Contains("a FIFO") && Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(mold::read_regular_file(dir.path(), 100, "the report"),
                    Catch::Contains("a directory"));
  CHECK_THROWS_WITH(mold::read_regular_file("/dev/zero", 100, "the report"),
                    Catch::Contains("a character device"));
  CHECK_THROWS_WITH(
      mold::read_regular_file(dir.path() + "/none", 100, "the report"),
      Catch::Contains("No such file or directory"));
}
