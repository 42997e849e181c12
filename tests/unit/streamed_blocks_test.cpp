// A component's blocks as its files store them, through a block window: each
// block's ranges are its parameters' stored tensors (a fused one once), in a
// safetensors file and a GGUF alike, and the window hands out exactly their
// bytes.
#include <catch2/catch.hpp>
#include <cstring>
#include <mold/base/error.hpp>
#include <mold/catalog/streamed_blocks.hpp>
#include <mold/tensor/block_window.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <string>
#include <vector>

#include "support/gguf_writer.hpp"
#include "support/process.hpp"

using mold::LayoutMapping;
using mold::TensorOp;
using mold::TensorRecipe;
using mold::test::TempDir;

namespace {

/// A safetensors file of F32 tensors, each filled with its own byte value.
std::string safetensors_file(
    const TempDir& dir,
    const std::vector<std::pair<std::string, std::int64_t>>& tensors) {
  std::string header = "{", data;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, elements] = tensors[i];
    const std::size_t begin = data.size();
    data.append(std::size_t(elements) * 4, char(i + 1));
    header += (i ? "," : "") + std::string("\"") + name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(elements) +
              "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]}";
  }
  header += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = char((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
  return dir.write("model.safetensors", bytes + header + data);
}

TensorRecipe copy(const std::string& target, const std::string& source) {
  TensorRecipe r;
  r.target = target;
  r.sources = {source};
  return r;
}

TensorRecipe rows(const std::string& target, const std::string& source,
                  std::int64_t begin, std::int64_t end) {
  TensorRecipe r = copy(target, source);
  r.op = TensorOp::rows;
  r.row_begin = begin;
  r.row_end = end;
  return r;
}

/// Every byte of each range the window hands out equals `expected(range)`.
template <class Expected>
void check_streamed(const std::vector<mold::StreamedBlock>& blocks,
                    Expected expected) {
  mold::BlockWindow window(blocks, 2, 2);
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const auto view = window.acquire(b);
      for (std::size_t r = 0; r < blocks[b].ranges.size(); ++r) {
        const std::string want = expected(blocks[b].ranges[r]);
        INFO(blocks[b].ranges[r].tensor);
        REQUIRE(want.size() == blocks[b].ranges[r].bytes);
        CHECK(std::memcmp(view.data[r], want.data(), want.size()) == 0);
      }
    }
}

}  // namespace

TEST_CASE(
    "a safetensors component's blocks are its parameters' stored "
    "tensors, a fused one once",
    "[stream]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::int64_t>> stored = {
      {"model.embed.weight", 8},        {"model.layers.0.qkv.weight", 12},
      {"model.layers.0.out.weight", 5}, {"model.layers.1.qkv.weight", 12},
      {"model.layers.1.out.weight", 5}, {"model.norm.weight", 3}};
  const std::string file = safetensors_file(dir, stored);
  const mold::TensorListing listing = mold::read_tensor_listing({file});
  LayoutMapping mapping;
  mapping.layout = "test";
  mapping.recipes.push_back(copy("embed.weight", "model.embed.weight"));
  for (const char* layer : {"0", "1"}) {
    const std::string at = std::string("layers.") + layer + ".";
    const std::string qkv = "model." + at + "qkv.weight";
    mapping.recipes.push_back(rows(at + "q.weight", qkv, 0, 4));
    mapping.recipes.push_back(rows(at + "k.weight", qkv, 4, 8));
    mapping.recipes.push_back(rows(at + "v.weight", qkv, 8, 12));
    mapping.recipes.push_back(
        copy(at + "out.weight", "model." + at + "out.weight"));
  }
  mapping.recipes.push_back(copy("norm.weight", "model.norm.weight"));

  const auto blocks =
      mold::streamed_blocks(listing, mapping, {"layers.0.", "layers.1."});
  REQUIRE(blocks.size() == 2);
  REQUIRE(blocks[1].ranges.size() == 2);  // qkv once, then out
  CHECK(blocks[1].ranges[0].tensor == "model.layers.1.qkv.weight");
  CHECK(blocks[1].ranges[1].tensor == "model.layers.1.out.weight");
  CHECK(blocks[0].bytes() == (12 + 5) * 4);
  check_streamed(blocks, [&](const mold::StreamedRange& range) {
    for (std::size_t i = 0; i < stored.size(); ++i)
      if (stored[i].first == range.tensor)
        return std::string(std::size_t(stored[i].second) * 4, char(i + 1));
    return std::string();
  });

  CHECK_THROWS_WITH(
      mold::streamed_blocks(listing, mapping, {"layers.2."}),
      Catch::Contains(
          "no parameter of the test layout starts with 'layers.2.'"));
  // A stored tensor two blocks are made from: they are not independent.
  LayoutMapping shared = mapping;
  shared.recipes.push_back(copy("layers.1.extra.weight", "model.embed.weight"));
  shared.recipes.push_back(copy("layers.0.extra.weight", "model.embed.weight"));
  CHECK_THROWS_WITH(
      mold::streamed_blocks(listing, shared, {"layers.0.", "layers.1."}),
      Catch::Contains("'model.embed.weight' makes parameters of blocks"));
  // A listing without the file's header cannot say where the bytes are.
  mold::TensorListing bare;
  bare.add_file(file, std::nullopt, listing.tensors());
  CHECK_THROWS_WITH(mold::streamed_blocks(bare, mapping, {"layers.0."}),
                    Catch::Contains("where its data starts is not known"));
}

TEST_CASE(
    "a GGUF component's blocks stream as stored: ggml blocks stay "
    "blocks",
    "[stream]") {
  TempDir dir;
  mold::test::GgufWriter w;
  w.metadata_string("general.architecture", "test");
  std::vector<std::vector<std::uint8_t>> data;
  for (int layer = 0; layer < 3; ++layer) {
    // Q8_0 (type 8): 34 bytes a block of 32; two rows of 32.
    std::vector<std::uint8_t> bytes(68);
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = std::uint8_t(layer * 50 + i);
    w.tensor("blk." + std::to_string(layer) + ".attn.weight", {32, 2}, 8,
             bytes);
    data.push_back(bytes);
  }
  const std::string file = dir.path() + "/model.gguf";
  w.write(file);
  const mold::TensorListing listing = mold::read_tensor_listing({file});
  LayoutMapping mapping;
  mapping.layout = "gguf";
  std::vector<std::string> prefixes;
  for (int layer = 0; layer < 3; ++layer) {
    const std::string l = std::to_string(layer);
    mapping.recipes.push_back(
        copy("layers." + l + ".attn.weight", "blk." + l + ".attn.weight"));
    prefixes.push_back("layers." + l + ".");
  }
  const auto blocks = mold::streamed_blocks(listing, mapping, prefixes);
  REQUIRE(blocks.size() == 3);
  check_streamed(blocks, [&](const mold::StreamedRange& range) {
    const int layer = range.tensor[4] - '0';
    return std::string(data[layer].begin(), data[layer].end());
  });
}
