#pragma once
/// Reading and writing files without blocking on, or destroying, what is not
/// a regular file. An input that is a FIFO or a device would block or never
/// end; an output over a FIFO, a device node, a socket or a directory must not
/// be replaced by a regular file. Outputs are written beside their target and
/// renamed over it only when complete, so a failed run never loses the old
/// file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace mold {

/// What `path` is, for messages: "a regular file", "a directory", "a FIFO",
/// "a character device", "a block device", "a socket", "missing" (symlinks are
/// followed; "a dangling symlink" when the target is missing).
std::string describe_file_type(const std::filesystem::path& path);

/// Throws InvalidArgument unless `path` is a regular file (after symlinks):
/// "--input data.fifo is a FIFO, not a regular file: give a file". `what` names
/// where the path came from ("--input", "the config file").
void require_regular_input(const std::filesystem::path& path,
                           std::string_view what);

/// The whole of `path`, a regular file (after symlinks) of at most
/// `max_bytes`: opened without blocking (a FIFO never hangs the caller) and
/// checked on the open descriptor, then read to its end. Throws Error naming
/// `what` ("--points-from"), the path and what it is instead ("a FIFO",
/// "5 GiB, more than a report can be").
std::string read_regular_file(const std::filesystem::path& path,
                              std::uintmax_t max_bytes, std::string_view what);

/// Writes `path` atomically: `write` fills a temporary file beside the file
/// that will be replaced, which then replaces it by rename. A symlink is
/// followed (its final target is replaced; the link stays), an existing file
/// keeps its permission bits, and a target that exists but is not a regular
/// file (directory, FIFO, device, socket) is refused before anything is
/// written. Throws Error naming `what` and the path; the target is untouched
/// then and no temporary file is left.
void write_file_atomically(const std::filesystem::path& path,
                           std::string_view what,
                           const std::function<void(std::ostream&)>& write);

/// Reads exactly `count` bytes of the open file `fd` from `offset` into
/// `into` (pread, retried on short reads and EINTR). Throws Error saying how
/// many bytes were missing when the file ends first (it shrank after it was
/// opened), or what the system said ("Input/output error").
void read_at(int fd, void* into, std::size_t count, std::int64_t offset);

/// Whether `name` is one plain folder or file name: letters, digits, '_',
/// '-' and '.', and not "." or "..". A name read from a file (a component of
/// model_index.json, a snapshot in refs/main) must be one before it is joined
/// to a path, so that it cannot point elsewhere.
bool is_plain_name(const std::string& name);

}  // namespace mold
