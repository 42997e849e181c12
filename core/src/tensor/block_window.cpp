#include "mold/tensor/block_window.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"

namespace mold {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kBlockAlignment = 64;

std::uint64_t aligned_size(std::uint64_t bytes) {
  return (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
}

/// A range's bytes in a block's buffer: each range on its own aligned start.
std::uint64_t buffer_bytes(const StreamedBlock& block) {
  std::uint64_t total = 0;
  for (const auto& range : block.ranges) total += aligned_size(range.bytes);
  return std::max<std::uint64_t>(total, kBlockAlignment);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::uint64_t StreamedBlock::bytes() const {
  std::uint64_t total = 0;
  for (const auto& range : ranges) total += range.bytes;
  return total;
}

/// A weight file, open for the window's life, and what it was when opened.
struct BlockWindow::OpenFile {
  std::string path;
  int fd = -1;
  struct stat opened {};
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
  /// Throws Error when the file is no longer what it was when opened.
  void check_unchanged(const StreamedRange& range, std::size_t block) const {
    struct stat now {};
    if (::fstat(fd, &now) != 0)
      throw Error(
          fmt::format("weight file {}: cannot read its state ({}) "
                      "while streaming tensor '{}' of block {}",
                      path, std::strerror(errno), range.tensor, block));
    const bool same_size = now.st_size == opened.st_size;
    const bool same_time = now.st_mtim.tv_sec == opened.st_mtim.tv_sec &&
                           now.st_mtim.tv_nsec == opened.st_mtim.tv_nsec;
    if (same_size && same_time) return;
    throw Error(fmt::format(
        "weight file {} changed while it was streamed ({}): tensor '{}' of "
        "block {} cannot be read as it was, and nothing was written. Let the "
        "download or copy that writes it finish, then run again",
        path,
        same_size ? "it was modified"
                  : fmt::format("{} bytes when opened, {} now",
                                std::int64_t(opened.st_size),
                                std::int64_t(now.st_size)),
        range.tensor, block));
  }
};

/// One allocation, 64-byte aligned.
struct BlockWindow::FreeBuffer {
  void operator()(std::byte* p) const { std::free(p); }
};

/// A block read (or the error reading it gave).
struct BlockWindow::Slot {
  std::size_t index = 0;
  std::unique_ptr<std::byte, FreeBuffer> memory;
  std::vector<const std::byte*> data;
  std::exception_ptr error;
};

BlockWindow::BlockWindow(std::vector<StreamedBlock> blocks, std::size_t window,
                         std::size_t passes)
    : blocks_(std::move(blocks)), window_(window) {
  if (blocks_.empty())
    throw InvalidArgument("a streamed component needs at least one block");
  if (window_ < 1)
    throw InvalidArgument(
        "a streaming window of 0 blocks holds nothing: give at least 1");
  if (passes < 1)
    throw InvalidArgument("streaming needs at least one pass over the blocks");
  window_ = std::min(window_, blocks_.size());
  total_ = blocks_.size() * passes;
  for (std::size_t b = 0; b < blocks_.size(); ++b)
    for (const auto& range : blocks_[b].ranges) {
      auto& file = files_[range.file];
      if (!file) {
        file = std::make_unique<OpenFile>();
        file->path = range.file;
        file->fd =
            ::open(range.file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (file->fd < 0)
          throw Error(
              fmt::format("weight file {}: cannot open it to stream "
                          "({}); check the path",
                          range.file, std::strerror(errno)));
        if (::fstat(file->fd, &file->opened) != 0 ||
            !S_ISREG(file->opened.st_mode))
          throw Error(
              fmt::format("weight file {}: not a regular file; give "
                          "the checkpoint's path",
                          range.file));
      }
      const auto size = std::uint64_t(file->opened.st_size);
      if (range.offset > size || range.bytes > size - range.offset)
        throw Error(fmt::format(
            "weight file {}: tensor '{}' of block {} lies at bytes {}..{}, "
            "past the file's end ({} bytes): the file is truncated",
            range.file, range.tensor, b, range.offset,
            range.offset + range.bytes, size));
    }
  reader_ = std::thread([this] { read_ahead(); });
}

BlockWindow::~BlockWindow() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  reader_.join();
}

std::unique_ptr<BlockWindow::Slot> BlockWindow::read_block(
    std::size_t position) {
  auto slot = std::make_unique<Slot>();
  slot->index = position % blocks_.size();
  const StreamedBlock& block = blocks_[slot->index];
  try {
    const std::uint64_t bytes = buffer_bytes(block);
    slot->memory.reset(
        static_cast<std::byte*>(std::aligned_alloc(kBlockAlignment, bytes)));
    if (!slot->memory)
      throw Error(fmt::format("cannot allocate {} bytes to stream block {}",
                              bytes, slot->index));
    std::uint64_t at = 0;
    for (const auto& range : block.ranges) {
      const OpenFile& file = *files_.at(range.file);
      std::byte* into = slot->memory.get() + at;
      file.check_unchanged(range, slot->index);
      try {
        read_at(file.fd, into, range.bytes, std::int64_t(range.offset));
      } catch (const Error& e) {
        throw Error(fmt::format("weight file {}: tensor '{}' of block {}: {}",
                                file.path, range.tensor, slot->index,
                                e.what()));
      }
      // A write during the read leaves a new modification time.
      file.check_unchanged(range, slot->index);
      slot->data.push_back(into);
      at += aligned_size(range.bytes);
    }
  } catch (...) {
    slot->error = std::current_exception();
    slot->memory.reset();
    slot->data.clear();
  }
  // The kernel starts reading the block after this one meanwhile.
  if (position + 1 < total_)
    for (const auto& range : blocks_[(position + 1) % blocks_.size()].ranges)
      ::posix_fadvise(files_.at(range.file)->fd, off_t(range.offset),
                      off_t(range.bytes), POSIX_FADV_WILLNEED);
  return slot;
}

void BlockWindow::read_ahead() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A block may be read while fewer than `window_` are in memory: those
    // read and waiting, and the one handed out.
    changed_.wait(lock, [this] {
      return stopping_ || next_to_read_ >= total_ ||
             ready_.size() + (current_ ? 1 : 0) < window_;
    });
    if (stopping_ || next_to_read_ >= total_) return;
    const std::size_t position = next_to_read_++;
    stats_.peak_blocks =
        std::max(stats_.peak_blocks, ready_.size() + (current_ ? 1 : 0) + 1);
    lock.unlock();
    const auto started = Clock::now();
    std::unique_ptr<Slot> slot = read_block(position);
    const double seconds = seconds_since(started);
    lock.lock();
    const bool failed = bool(slot->error);
    if (!failed) {
      ++stats_.blocks_read;
      stats_.bytes_read += blocks_[slot->index].bytes();
    }
    stats_.read_seconds += seconds;
    ready_.push_back(std::move(slot));
    changed_.notify_all();
    if (failed) return;  // the caller gets the error; nothing after it
  }
}

BlockView BlockWindow::acquire(std::size_t index) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_hand_ >= total_)
    throw InvalidArgument(fmt::format(
        "block {} asked for after all {} blocks of {} passes were streamed",
        index, blocks_.size(), total_ / blocks_.size()));
  if (failure_) std::rethrow_exception(failure_);  // nothing after it was read
  const std::size_t expected = next_to_hand_ % blocks_.size();
  if (index != expected)
    throw InvalidArgument(fmt::format(
        "block {} asked for where the streaming order has block {}: a "
        "streamed component runs its blocks in order",
        index, expected));
  current_.reset();  // its memory is the next read's
  changed_.notify_all();
  const auto started = Clock::now();
  changed_.wait(lock, [this] { return !ready_.empty(); });
  stats_.wait_seconds += seconds_since(started);
  std::unique_ptr<Slot> slot = std::move(ready_.front());
  ready_.pop_front();
  ++next_to_hand_;
  if (slot->error) {
    failure_ = slot->error;
    std::rethrow_exception(failure_);
  }
  current_ = std::move(slot);
  changed_.notify_all();
  return {current_->index, current_->data};
}

std::uint64_t BlockWindow::peak_bytes(const std::vector<StreamedBlock>& blocks,
                                      std::size_t window) {
  std::uint64_t largest = 0;
  for (const auto& block : blocks)
    largest = std::max(largest, buffer_bytes(block));
  return largest * std::min<std::uint64_t>(std::max<std::size_t>(window, 1),
                                           blocks.size());
}

BlockWindowStats BlockWindow::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace mold
