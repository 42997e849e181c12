#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>

#include "support/aten_for_tests.hpp"
#include "support/process.hpp"

using namespace mold;
using mold::test::TempDir;

namespace {
/// A safetensors file from a raw header and data, to build broken ones.
std::string write_raw(const TempDir& dir, const std::string& name,
                      const std::string& header, const std::string& data,
                      std::int64_t claimed_header = -1) {
  std::string bytes(8, '\0');
  const std::uint64_t n =
      claimed_header < 0 ? header.size() : std::uint64_t(claimed_header);
  for (int i = 0; i < 8; ++i) bytes[i] = char((n >> (8 * i)) & 0xff);
  return dir.write(name, bytes + header + data);
}
}  // namespace

TEST_CASE("safetensors round trip in F32, F16 and BF16", "[safetensors]") {
  TempDir dir;
  at::manual_seed(3);
  const at::Tensor a = at::randn({3, 4, 5});
  const at::Tensor h = at::randn({7}).to(at::kHalf);
  const at::Tensor b = at::randn({2, 2}).to(at::kBFloat16);
  const auto path = dir.path() + "/w.safetensors";
  save_safetensors(path, {{"a", a}, {"half", h}, {"bf", b}},
                   {{"format", "pt"}});
  const auto file = SafetensorsFile::open(path);
  CHECK(file.names() == std::vector<std::string>{"a", "bf", "half"});
  CHECK(file.metadata().at("format") == "pt");
  CHECK(at::equal(file.tensor("a"), a));
  CHECK(at::equal(file.view("half"), h));
  CHECK(file.view("bf").scalar_type() == at::kBFloat16);
  CHECK(at::equal(file.view("bf"), b));
  at::Tensor into = at::zeros({3, 4, 5}, at::kDouble);
  file.copy_into("a", into);
  CHECK(at::allclose(into, a.to(at::kDouble)));
  // The view is copy-on-write: changing it leaves the file alone.
  at::Tensor v = file.view("a");
  v.zero_();
  CHECK(at::equal(SafetensorsFile::open(path).tensor("a"), a));
  CHECK(std::filesystem::directory_iterator(dir.path()) !=
        std::filesystem::directory_iterator());
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    CHECK(entry.path().filename() ==
          "w.safetensors");  // no temporary left behind
}

TEST_CASE("broken safetensors files name the file and the tensor",
          "[safetensors]") {
  // The header's errors are tested on the parser alone
  // (unit/safetensors_header_test.cpp); here, that the file's path leads them,
  // and the errors only a file or its tensors can have.
  TempDir dir;
  const std::string ok =
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string short_file = dir.write("short.safetensors", "abc");
  CHECK_THROWS_WITH(SafetensorsFile::open(short_file),
                    Catch::Contains(short_file + ": truncated: 3 bytes"));
  const std::string out_of_range =
      write_raw(dir, "range.safetensors", ok, std::string(4, '\0'));
  CHECK_THROWS_WITH(
      SafetensorsFile::open(out_of_range),
      Catch::Contains(out_of_range + ": tensor 'w': data_offsets [0, 8]"));
  const auto good =
      write_raw(dir, "good.safetensors", ok, std::string(8, '\0'));
  const auto file = SafetensorsFile::open(good);
  CHECK_THROWS_WITH(
      file.tensor("missing"),
      Catch::Contains(good) && Catch::Contains("no tensor 'missing'"));
  at::Tensor wrong = at::zeros({3});
  CHECK_THROWS_WITH(
      file.copy_into("w", wrong),
      Catch::Contains("tensor 'w' has shape [2], the model expects [3]"));
  CHECK_THROWS_WITH(SafetensorsFile::open(dir.path() + "/absent.safetensors"),
                    Catch::Contains("absent.safetensors: cannot open"));
  CHECK_THROWS_WITH(save_safetensors(dir.path() + "/no/such/dir/x.safetensors",
                                     {{"w", wrong}}),
                    Catch::Contains("cannot create a file beside it"));
  const std::string fifo = dir.path() + "/input.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(SafetensorsFile::open(fifo),
                    Catch::Contains("is a FIFO, not a regular file"));
}

TEST_CASE("read_into reads a tensor from the file, converting piece by piece",
          "[safetensors]") {
  TempDir dir;
  at::manual_seed(5);
  const at::Tensor big = at::randn({37, 11}).to(at::kBFloat16);
  const at::Tensor small = at::randn({3}).to(at::kHalf);
  const auto path = dir.path() + "/w.safetensors";
  save_safetensors(path, {{"big", big}, {"small", small}});
  const auto file = SafetensorsFile::open(path);
  // The stored dtype: straight into the destination.
  at::Tensor same = at::empty({37, 11}, at::kBFloat16);
  file.read_into("big", same);
  CHECK(at::equal(same, big));
  // Another dtype, through buffers of 1, 7 and 1000 elements (the last piece
  // shorter than the others, and a buffer larger than the tensor).
  for (const std::size_t chunk : {2, 14, 2000}) {
    at::Tensor wide = at::empty({37, 11}, at::kFloat);
    file.read_into("big", wide, chunk);
    CHECK(at::equal(wide, big.to(at::kFloat)));
  }
  at::Tensor converted = at::empty({3}, at::kDouble);
  file.read_into("small", converted);
  CHECK(at::equal(converted, small.to(at::kDouble)));
  // The wrong shape, and a destination that is not contiguous.
  at::Tensor wrong = at::empty({11, 37}, at::kFloat);
  CHECK_THROWS_WITH(file.read_into("big", wrong),
                    Catch::Contains("has shape [37, 11], the model expects"));
  at::Tensor strided = at::empty({11, 37}, at::kFloat).t();
  CHECK_THROWS_WITH(file.read_into("big", strided),
                    Catch::Contains("contiguous cpu tensor"));
}

TEST_CASE("read_into says the file shrank when it ends before a tensor",
          "[safetensors]") {
  TempDir dir;
  const auto path = dir.path() + "/w.safetensors";
  save_safetensors(path, {{"a", at::ones({64})}, {"b", at::ones({64})}});
  const auto file = SafetensorsFile::open(path);
  const std::size_t b_end = file.file_offset("b") + 64 * 4;
  CHECK(file.file_offset("a") + 64 * 4 == file.file_offset("b"));
  // Cut the file after it was opened: 100 bytes of b's 256 are gone.
  REQUIRE(::truncate(path.c_str(), off_t(b_end - 100)) == 0);
  at::Tensor a = at::empty({64});
  file.read_into("a", a);
  CHECK(at::equal(a, at::ones({64})));
  at::Tensor b = at::empty({64});
  CHECK_THROWS_AS(file.read_into("b", b), SafetensorsError);
  CHECK_THROWS_WITH(
      file.read_into("b", b),
      Catch::Contains("w.safetensors: tensor 'b': the file ends 100 bytes "
                      "early") &&
          Catch::Contains("shrank after it was opened"));
}

TEST_CASE("a weight set orders tensors as their bytes lie, file by file",
          "[safetensors]") {
  TempDir dir;
  // save_safetensors lays tensors out in the order given, here not the order
  // of their names; two shards without an index.
  save_safetensors(dir.path() + "/model-00001.safetensors",
                   {{"z.first", at::ones({4})}, {"a.first", at::ones({4})}});
  save_safetensors(dir.path() + "/model-00002.safetensors",
                   {{"b.second", at::ones({2})}, {"m.second", at::ones({2})}});
  const WeightSet weights = WeightSet::open(dir.path());
  const auto& first = weights.file_of("a.first");
  REQUIRE(first.file_offset("z.first") < first.file_offset("a.first"));
  CHECK(weights.in_file_order({"m.second", "a.first", "b.second", "z.first"}) ==
        std::vector<std::string>{"z.first", "a.first", "b.second", "m.second"});
  at::Tensor into = at::zeros({2}, at::kDouble);
  weights.read_into("m.second", into);
  CHECK(at::equal(into, at::ones({2}, at::kDouble)));
}
