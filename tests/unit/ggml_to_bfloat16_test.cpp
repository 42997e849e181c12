// Quantized blocks straight to bfloat16 (the vector clone this CPU runs) are
// bit for bit the reference float32 values (dequantize_blocks) rounded as
// libtorch rounds to bfloat16, for random blocks and for scales at the edges
// of a half: zero, subnormal, the largest, infinite and NaN.

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mold/base/error.hpp>
#include <mold/tensor/ggml_to_bfloat16.hpp>
#include <random>
#include <vector>

namespace {

/// libtorch's float-to-bfloat16 (c10::BFloat16's round_to_nearest_even),
/// written out here so that the test does not read the code it checks.
std::uint16_t reference_bfloat16(float value) {
  if (std::isnan(value)) return 0x7FC0;
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const std::uint32_t bias = ((bits >> 16) & 1) + 0x7FFF;
  return std::uint16_t((bits + bias) >> 16);
}

}  // namespace

TEST_CASE("quantized blocks to bfloat16 are the reference values rounded",
          "[unit][ggml]") {
  std::mt19937 random(7);
  const std::vector<std::uint16_t> edge_scales = {
      0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00, 0xBC00,
      0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x2E66};
  for (const mold::GgmlType type :
       {mold::GgmlType::q4_0, mold::GgmlType::q8_0, mold::GgmlType::q4_k}) {
    const mold::GgmlTypeInfo& info = *mold::ggml_type_info(std::uint32_t(type));
    INFO(info.name);
    REQUIRE(mold::dequantizes_to_bfloat16_directly(type));
    const std::size_t blocks = 64 + edge_scales.size();
    std::vector<std::uint8_t> data(blocks * info.block_bytes);
    for (auto& byte : data) byte = std::uint8_t(random());
    // Q4_0 and Q8_0 keep their scale in bytes 0-1; Q4_K d and dmin in 0-3.
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint8_t* block = data.data() + b * info.block_bytes;
      const std::uint16_t scale =
          b < edge_scales.size() ? edge_scales[b]
                                 : std::uint16_t(0x2000 + random() % 0x2000);
      block[0] = std::uint8_t(scale), block[1] = std::uint8_t(scale >> 8);
      if (type == mold::GgmlType::q4_k && b >= edge_scales.size())
        block[2] = std::uint8_t(random()), block[3] = 0x24;
    }
    const std::size_t elements = blocks * info.block_elements;
    std::vector<float> reference(elements);
    mold::dequantize_blocks(type, data.data(), elements, reference.data());
    std::vector<std::uint16_t> direct(elements);
    mold::dequantize_blocks_to_bfloat16(type, data.data(), elements,
                                        direct.data());
    std::size_t differ = 0, first = elements;
    for (std::size_t i = 0; i < elements; ++i)
      if (direct[i] != reference_bfloat16(reference[i])) {
        ++differ;
        first = std::min(first, i);
      }
    INFO("first at " << first);
    CHECK(differ == 0);
  }
}

TEST_CASE("a type or a length the bfloat16 path does not take is named",
          "[unit][ggml]") {
  std::vector<std::uint8_t> data(256);
  std::vector<std::uint16_t> out(256);
  CHECK_FALSE(mold::dequantizes_to_bfloat16_directly(mold::GgmlType::q6_k));
  CHECK_THROWS_WITH(mold::dequantize_blocks_to_bfloat16(
                        mold::GgmlType::q6_k, data.data(), 256, out.data()),
                    Catch::Contains("Q6_K") && Catch::Contains("Q4_0"));
  CHECK_THROWS_WITH(
      mold::dequantize_blocks_to_bfloat16(mold::GgmlType::q4_0, data.data(), 33,
                                          out.data()),
      Catch::Contains("33 elements") && Catch::Contains("Q4_0 blocks"));
}
