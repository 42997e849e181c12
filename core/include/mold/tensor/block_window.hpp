#pragma once
/// Streaming a model's repeated blocks from its weight files through a
/// bounded window (issue 55's `streamed` residency, its I/O half): the bytes
/// of at most W blocks are in memory at once, the one computing and up to
/// W - 1 read ahead, in the order the blocks run, by a reader thread (pread;
/// posix_fadvise WILLNEED on the block after). Blocks stay as stored (bf16,
/// ggml blocks, fp8): the caller makes its tensors over the bytes. Each file
/// is opened once and its identity (device, inode, size, modification time)
/// checked before every read: a file that changes or shrinks while it is
/// streamed stops the run with an error naming the file and the tensor, never
/// with other bytes. Torch-free.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mold {

/// One stored tensor of a block: where its bytes are.
struct StreamedRange {
  std::string file;    ///< the weight file's path
  std::string tensor;  ///< its name in the file, for errors
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// One repeated block (a transformer block, a decoder layer): its tensors.
struct StreamedBlock {
  std::vector<StreamedRange> ranges;
  std::uint64_t bytes() const;  ///< all its ranges
};

/// A block's bytes in memory: each range's, in the block's order, 64-byte
/// aligned. Valid until the next acquire() or the window's end.
struct BlockView {
  std::size_t index = 0;
  std::vector<const std::byte*> data;  ///< one per range
};

/// What the window did (for the plan's bytes moved per step and its time).
struct BlockWindowStats {
  std::uint64_t blocks_read = 0;
  std::uint64_t bytes_read = 0;
  double read_seconds = 0;      ///< the reader's time in pread
  double wait_seconds = 0;      ///< the caller's time waiting for a block
  std::size_t peak_blocks = 0;  ///< the most blocks in memory at once
};

class BlockWindow {
 public:
  /// Streams `blocks` in the order 0, 1, ..., N - 1, `passes` times (a
  /// denoiser's steps), through `window` blocks (1 to N). Opens each file
  /// and checks that every range lies inside it; throws Error naming the
  /// file (cannot open) or the tensor (a range past its end), and
  /// InvalidArgument for a window below 1, no blocks or no passes.
  BlockWindow(std::vector<StreamedBlock> blocks, std::size_t window,
              std::size_t passes);
  ~BlockWindow();  ///< stops the reader and joins it
  BlockWindow(const BlockWindow&) = delete;
  BlockWindow& operator=(const BlockWindow&) = delete;

  /// The next block of the order, `index` (checked: throws InvalidArgument
  /// for another), once read; the block before it is released. Throws the
  /// reader's Error (a file that changed, shrank or could not be read,
  /// naming it and the tensor) when the block could not be read.
  BlockView acquire(std::size_t index);

  /// The most bytes the window holds at once: `window` times the largest
  /// block (each range rounded up to its alignment), for the estimate.
  static std::uint64_t peak_bytes(const std::vector<StreamedBlock>& blocks,
                                  std::size_t window);

  BlockWindowStats stats() const;
  std::size_t window() const { return window_; }
  std::size_t blocks() const { return blocks_.size(); }

 private:
  struct OpenFile;
  struct FreeBuffer;
  struct Slot;

  void read_ahead();
  std::unique_ptr<Slot> read_block(std::size_t order_position);

  std::vector<StreamedBlock> blocks_;
  std::size_t window_;
  std::size_t total_;  ///< blocks to hand out: N x passes
  std::map<std::string, std::unique_ptr<OpenFile>> files_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Slot>> ready_;  ///< read, in order
  std::unique_ptr<Slot> current_;            ///< handed out
  std::size_t next_to_read_ = 0;             ///< position in the order
  std::size_t next_to_hand_ = 0;
  bool stopping_ = false;
  std::exception_ptr failure_;  ///< a block's error, given to every acquire
  BlockWindowStats stats_;
  std::thread reader_;
};

}  // namespace mold
