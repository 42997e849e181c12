#include "mold/base/file_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "mold/base/error.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

std::string type_of(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

/// The file a write to `path` lands in: symlinks resolved to their final
/// target (which may not exist yet).
fs::path final_target(const fs::path& path) {
  fs::path current = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(current, ec)) return current;
    const fs::path link = fs::read_symlink(current, ec);
    if (ec) return current;
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  throw Error(
      fmt::format("{}: too many levels of symbolic links", path.string()));
}

}  // namespace

std::string describe_file_type(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return type_of(st);
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
    return "a dangling symlink";
  return "missing";
}

void require_regular_input(const fs::path& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InvalidArgument(fmt::format("{} {}: {}. Check the path", what,
                                      path.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw InvalidArgument(
        fmt::format("{} {} is {}, not a regular file: give a file", what,
                    path.string(), type_of(st)));
}

std::string read_regular_file(const fs::path& path, std::uintmax_t max_bytes,
                              std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("{} {}: {}. Check the path", what, path.string(),
                            std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(
        fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw Error(fmt::format("{} {} is {}, not a regular file: give a file",
                            what, path.string(), type_of(st)));
  if (std::uintmax_t(st.st_size) > max_bytes)
    throw Error(fmt::format(
        "{} {} is {} bytes, more than the {} it can be: is it the right "
        "file?",
        what, path.string(), std::uintmax_t(st.st_size), max_bytes));
  // Read to the end, but never past the bound (the file may grow).
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(
          fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
    if (n == 0) break;
    if (text.size() + std::size_t(n) > max_bytes)
      throw Error(fmt::format("{} {} grew past {} bytes while it was read",
                              what, path.string(), max_bytes));
    text.append(buffer, std::size_t(n));
  }
  return text;
}

void write_file_atomically(const fs::path& path, std::string_view what,
                           const std::function<void(std::ostream&)>& write) {
  const fs::path target = final_target(path);
  struct stat st {};
  mode_t mode = 0;
  bool exists = false;
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(fmt::format(
          "{} {} is {}: refusing to replace it; give the path of a regular "
          "file (or a new one)",
          what, path.string(), type_of(st)));
    exists = true;
    mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    throw Error(
        fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
  }
  const fs::path directory =
      target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string pattern =
      (directory / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw Error(fmt::format("{} {}: cannot create a file beside it in {}: {}",
                            what, path.string(), directory.string(),
                            std::strerror(errno)));
  const fs::path temporary = pattern;
  auto discard = [&] {
    std::error_code ec;
    fs::remove(temporary, ec);
  };
  // mkstemp makes 0600; a new file gets the usual 0666 less the umask, an
  // existing one keeps its bits.
  if (!exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  ::close(fd);
  try {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error(fmt::format("{} {}: cannot write beside it: {}", what,
                              path.string(), std::strerror(errno)));
    write(out);
    out.flush();
    if (!out)
      throw Error(
          fmt::format("{} {}: writing failed (disk full?); the file "
                      "was not changed",
                      what, path.string()));
  } catch (...) {
    discard();
    throw;
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    const int error = errno;
    discard();
    throw Error(fmt::format("{} {}: cannot replace it: {}", what, path.string(),
                            std::strerror(error)));
  }
}

void read_at(int fd, void* into, std::size_t count, std::int64_t offset) {
  // Linux moves at most 0x7ffff000 bytes per call; smaller pieces also let a
  // signal interrupt a long read without losing progress.
  constexpr std::size_t kPiece = std::size_t(1) << 30;
  auto* out = static_cast<char*>(into);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd, out + done, std::min(kPiece, count - done),
                                off_t(offset) + off_t(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot read {} bytes at offset {}: {}",
                              count - done, offset + std::int64_t(done),
                              std::strerror(errno)));
    }
    if (got == 0)
      throw Error(fmt::format(
          "the file ends {} bytes early, at offset {}: it shrank after it "
          "was opened (a download or copy still running?)",
          count - done, offset + std::int64_t(done)));
    done += std::size_t(got);
  }
}

bool is_plain_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace mold
