// Thousands of mutated safetensors files (MOLD_MUTATION_CASES for more): each
// opens, or fails with a SafetensorsError naming the file; nothing crashes,
// no other exception escapes, and what opens reads back within its bounds.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <mold/base/bytes.hpp>
#include <mold/tensor/safetensors.hpp>
#include <random>

#include "support/aten_for_tests.hpp"
#include "support/mutations.hpp"
#include "support/process.hpp"

using namespace mold;

TEST_CASE("mutated safetensors files open or fail with a SafetensorsError",
          "[safetensors][mutation]") {
  mold::test::TempDir dir;
  const std::string seed_path = dir.path() + "/seed.safetensors";
  save_safetensors(seed_path,
                   {{"weight", at::arange(24, at::kFloat).reshape({2, 3, 4})},
                    {"bias", at::ones({3}, at::kHalf)},
                    {"index", at::arange(5, at::kLong)}},
                   {{"format", "pt"}});
  std::string seed;
  {
    std::ifstream in(seed_path, std::ios::binary);
    seed.assign(std::istreambuf_iterator<char>(in), {});
  }
  const int cases = mold::test::mutation_cases(2000);
  std::mt19937_64 random(20261201);
  int opened = 0, refused = 0;
  const std::string path = dir.path() + "/case.safetensors";
  for (int i = 0; i < cases; ++i) {
    const std::string bytes = mold::test::mutate(seed, random);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    INFO("case " << i);
    try {
      const auto file = SafetensorsFile::open(path);
      for (const auto& name : file.names()) {
        const at::Tensor t = file.view(name);
        CHECK(t.nbytes() <= kMaxBytes);
        CHECK(t.numel() >= 0);
      }
      ++opened;
    } catch (const SafetensorsError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("case.safetensors"));
      ++refused;
    }
  }
  CHECK(opened + refused == cases);
  CHECK(refused > cases / 2);  // the mutations do break most files
}
