// A streamed component's blocks through a bounded window: the bytes handed
// out are the file's, in order over several passes; no more than the window
// is in memory; the next block is read while the current one is used; and a
// weight file that changes or shrinks while it is streamed stops the run with
// an error naming the file and the tensor, never with other bytes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/tensor/block_window.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/wait.hpp"

using mold::BlockWindow;
using mold::StreamedBlock;
using mold::test::TempDir;

namespace {

/// A weight file of `bytes` bytes, byte i = (i * 7 + 3) mod 251.
std::string weight_file(const TempDir& dir, const std::string& name,
                        std::size_t bytes) {
  std::string content(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) content[i] = char((i * 7 + 3) % 251);
  return dir.write(name, content);
}

/// `count` blocks of two tensors each (odd sizes: the buffer aligns them),
/// laid one after another in `file`.
std::vector<StreamedBlock> blocks_of(const std::string& file,
                                     std::size_t count) {
  std::vector<StreamedBlock> blocks;
  std::uint64_t at = 16;
  for (std::size_t b = 0; b < count; ++b) {
    StreamedBlock block;
    for (const std::uint64_t bytes :
         {std::uint64_t(1000 + b), std::uint64_t(37)}) {
      block.ranges.push_back({file,
                              "blocks." + std::to_string(b) + ".w" +
                                  std::to_string(block.ranges.size()),
                              at, bytes});
      at += bytes;
    }
    blocks.push_back(block);
  }
  return blocks;
}

bool holds_file_bytes(const mold::BlockView& view, const StreamedBlock& block) {
  for (std::size_t r = 0; r < block.ranges.size(); ++r)
    for (std::uint64_t i = 0; i < block.ranges[r].bytes; ++i) {
      const std::uint64_t at = block.ranges[r].offset + i;
      if (view.data[r][i] != std::byte((at * 7 + 3) % 251)) return false;
    }
  return true;
}

}  // namespace

TEST_CASE(
    "a block window hands out each block's file bytes, in order, for "
    "every pass, holding at most its window",
    "[stream]") {
  TempDir dir;
  const std::string file = weight_file(dir, "w.bin", 16 + 5 * 1100);
  const auto blocks = blocks_of(file, 5);
  for (const std::size_t window : {1, 2, 3, 5, 9}) {
    INFO("window " << window);
    BlockWindow stream(blocks, window, 3);
    for (int pass = 0; pass < 3; ++pass)
      for (std::size_t b = 0; b < blocks.size(); ++b) {
        const mold::BlockView view = stream.acquire(b);
        CHECK(view.index == b);
        REQUIRE(view.data.size() == 2);
        for (const auto* p : view.data)
          CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
        CHECK(holds_file_bytes(view, blocks[b]));
      }
    const auto stats = stream.stats();
    CHECK(stats.blocks_read == 15);
    CHECK(stats.bytes_read == 3 * (5 * 1037 + 10));
    CHECK(stats.peak_blocks <= std::min<std::size_t>(window, 5));
    CHECK(stats.peak_blocks >= 1);
    // Past the last pass, or out of order: refused by name.
    CHECK_THROWS_WITH(stream.acquire(0), Catch::Contains("after all 5 blocks"));
  }
  BlockWindow ordered(blocks, 2, 1);
  CHECK_THROWS_AS(ordered.acquire(1), mold::InvalidArgument);
  CHECK_THROWS_WITH(ordered.acquire(3),
                    Catch::Contains("block 3 asked for where the streaming "
                                    "order has block 0"));
  // The largest block, 1004 + 37 bytes, each range on a 64-byte start.
  CHECK(BlockWindow::peak_bytes(blocks, 2) == 2 * (1024 + 64));
  CHECK(BlockWindow::peak_bytes(blocks, 99) == 5 * (1024 + 64));
}

TEST_CASE("a block window reads the next block while the current one is used",
          "[stream]") {
  TempDir dir;
  const std::string file = weight_file(dir, "w.bin", 16 + 4 * 1100);
  const auto blocks = blocks_of(file, 4);
  BlockWindow stream(blocks, 2, 1);
  stream.acquire(0);
  // Block 1 arrives without another call: the reader fills the window.
  mold::test::wait_until([&] { return stream.stats().blocks_read == 2; },
                         "the window's second block to be read ahead");
  CHECK(stream.stats().peak_blocks == 2);
  // And no further: block 0 is still in use.
  CHECK(stream.stats().blocks_read == 2);
  CHECK(holds_file_bytes(stream.acquire(1), blocks[1]));
}

TEST_CASE(
    "a weight file that changes or shrinks while streamed stops the "
    "run naming the file and the tensor",
    "[stream][hostile]") {
  TempDir dir;
  SECTION("shrunk") {
    const std::string file = weight_file(dir, "shrinks.bin", 16 + 3 * 1100);
    const auto blocks = blocks_of(file, 3);
    BlockWindow stream(blocks, 1, 2);
    stream.acquire(0);
    REQUIRE(::truncate(file.c_str(), 1500) == 0);
    CHECK_THROWS_WITH(stream.acquire(1),
                      Catch::Contains(file) &&
                          Catch::Contains("changed while it was streamed") &&
                          Catch::Contains("bytes when opened") &&
                          Catch::Contains("tensor 'blocks.1.w0'"));
    // And every call after it, at once (the reader stopped).
    CHECK_THROWS_WITH(stream.acquire(2), Catch::Contains(file));
  }
  SECTION("rewritten in place") {
    const std::string file = weight_file(dir, "rewritten.bin", 16 + 3 * 1100);
    const auto blocks = blocks_of(file, 3);
    BlockWindow stream(blocks, 1, 1);
    stream.acquire(0);
    // Another process writes it: same size, a new modification time.
    const struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
    REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
    CHECK_THROWS_WITH(stream.acquire(1),
                      Catch::Contains(file) &&
                          Catch::Contains("it was modified") &&
                          Catch::Contains("tensor 'blocks.1.w0' of block 1"));
  }
  SECTION("refused before anything is read") {
    const std::string file = weight_file(dir, "short.bin", 2000);
    CHECK_THROWS_WITH(BlockWindow(blocks_of(file, 3), 2, 1),
                      Catch::Contains("tensor 'blocks.1.w0' of block 1") &&
                          Catch::Contains("past the file's end (2000 bytes)"));
    CHECK_THROWS_WITH(
        BlockWindow(blocks_of(dir.path() + "/absent.bin", 1), 1, 1),
        Catch::Contains("absent.bin: cannot open it to stream"));
    CHECK_THROWS_WITH(BlockWindow(blocks_of(dir.path(), 1), 1, 1),
                      Catch::Contains("not a regular file"));
    CHECK_THROWS_AS(BlockWindow(blocks_of(file, 1), 0, 1),
                    mold::InvalidArgument);
    CHECK_THROWS_AS(BlockWindow(blocks_of(file, 1), 1, 0),
                    mold::InvalidArgument);
    CHECK_THROWS_AS(BlockWindow({}, 1, 1), mold::InvalidArgument);
  }
}
