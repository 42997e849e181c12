// GGUF: the block formats against values computed here from the format
// description (element by element, and a few by hand), the tensor-operation
// dequantization against the reference bit for bit, and files: read back as
// written, refused by name when hostile, kept quantized at their own size.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mold/tensor/ggml_quant.hpp>
#include <mold/tensor/gguf_file.hpp>
#include <mold/tensor/quantized_tensor.hpp>
#include <random>
#include <sstream>
#include <tuple>

#include "support/aten_for_tests.hpp"
#include "support/gguf_writer.hpp"
#include "support/mutations.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace mold;
using mold::test::GgufWriter;
using mold::test::TempDir;

namespace {

using Block = std::vector<std::uint8_t>;

void put_half(Block& b, std::size_t at, float value) {
  const std::uint16_t bits = at::Half(value).x;
  b[at] = std::uint8_t(bits & 0xFF);
  b[at + 1] = std::uint8_t(bits >> 8);
}

// --- The format description, element by element (ggml's block layouts). ---

int low_or_high(const std::uint8_t* qs, std::size_t e) {
  return e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4;
}
int bit(const std::uint8_t* qh, std::size_t e) {
  return (qh[e / 8] >> (e % 8)) & 1;
}
/// Sub-block `s` (0..7) of a K-quant's 12 packed scale bytes: the 6-bit
/// scale and min.
std::pair<int, int> six_bit(const std::uint8_t* p, int s) {
  if (s < 4) return {p[s] & 63, p[s + 4] & 63};
  return {(p[s + 4] & 0xF) | ((p[s - 4] >> 6) << 4),
          (p[s + 4] >> 4) | ((p[s] >> 6) << 4)};
}

/// IQ4_NL's and IQ4_XS's code book.
constexpr int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                             1,    13,   25,  38,  53,  69,  89,  113};

float spec_value(GgmlType type, const Block& b, std::size_t e) {
  const std::uint8_t* p = b.data();
  auto h = [&](std::size_t at) {
    return half_to_float(std::uint16_t(p[at] | (p[at + 1] << 8)));
  };
  switch (type) {
  case GgmlType::q4_0:
    return float(low_or_high(p + 2, e) - 8) * h(0);
  case GgmlType::q4_1:
    return float(low_or_high(p + 4, e)) * h(0) + h(2);
  case GgmlType::q5_0:
    return float((low_or_high(p + 6, e) | (bit(p + 2, e) << 4)) - 16) * h(0);
  case GgmlType::q5_1:
    return float(low_or_high(p + 8, e) | (bit(p + 4, e) << 4)) * h(0) + h(2);
  case GgmlType::q8_0:
    return float(std::int8_t(p[2 + e])) * h(0);
  case GgmlType::q4_k:
  case GgmlType::q5_k: {
    const bool five = type == GgmlType::q5_k;
    const int sub = int(e / 32);
    const std::uint8_t byte = p[(five ? 48 : 16) + (e / 64) * 32 + e % 32];
    int q = sub % 2 == 0 ? byte & 0xF : byte >> 4;
    if (five) q += 16 * ((p[16 + e % 32] >> sub) & 1);
    const auto [scale, min] = six_bit(p + 4, sub);
    return h(0) * float(scale) * float(q) - h(2) * float(min);
  }
  case GgmlType::q2_k:
  case GgmlType::q3_k: {
    // 2 low bits: byte l of each half's 32, shifted by 2 g for the g-th
    // pair of sub-blocks of 16.
    const bool three = type == GgmlType::q3_k;
    const std::size_t half = e / 128, r = e % 128, g = r / 32, l = r % 32;
    const int low = (p[(three ? 32 : 16) + half * 32 + l] >> (2 * g)) & 3;
    const std::size_t sub = e / 16;
    if (!three)
      return h(80) * float(p[sub] & 0xF) * float(low) -
             h(82) * float(p[sub] >> 4);
    const int high = (p[l] >> (4 * half + g)) & 1;  // hmask, inverted
    const std::uint8_t* s = p + 96;
    const int scale = (sub < 8 ? s[sub] & 0xF : s[sub - 8] >> 4) |
                      (((s[8 + sub % 4] >> (2 * (sub / 4))) & 3) << 4);
    return h(108) * float(scale - 32) * float(low - (high ? 0 : 4));
  }
  case GgmlType::iq4_nl:
    return h(0) * float(kLevels[low_or_high(p + 2, e)]);
  case GgmlType::iq4_xs: {
    const std::size_t sub = e / 32, j = e % 32;
    const int low = (p[4 + sub / 2] >> (4 * (sub % 2))) & 0xF;
    const int high = ((p[2] | (p[3] << 8)) >> (2 * sub)) & 3;
    return h(0) * float((low | (high << 4)) - 32) *
           float(kLevels[low_or_high(p + 8 + sub * 16, j)]);
  }
  case GgmlType::q6_k: {
    const std::size_t half = e / 128, r = e % 128, g = r / 32, l = r % 32;
    const std::uint8_t low = p[half * 64 + (g % 2) * 32 + l];
    const int nib = g < 2 ? low & 0xF : low >> 4;
    const int top = (p[128 + half * 32 + l] >> (2 * g)) & 3;
    const auto scale = std::int8_t(p[192 + half * 8 + r / 16]);
    return h(208) * float(scale) * float((nib | (top << 4)) - 32);
  }
  default:
    break;
  }
  FAIL("no spec for this type");
  return 0;
}

const std::vector<GgmlType> kQuantized = {
    GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0,   GgmlType::q5_1,
    GgmlType::q8_0, GgmlType::q2_k, GgmlType::q3_k,   GgmlType::q4_k,
    GgmlType::q5_k, GgmlType::q6_k, GgmlType::iq4_nl, GgmlType::iq4_xs};

/// Random bytes with the block's halves set to finite values.
Block random_block(GgmlType type, std::mt19937& random) {
  const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(type));
  Block b(info.block_bytes);
  for (auto& byte : b) byte = std::uint8_t(random());
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  const bool k = info.block_elements == 256;
  if (type == GgmlType::q6_k) {
    put_half(b, 208, scale(random));
  } else if (type == GgmlType::q2_k) {
    put_half(b, 80, std::abs(scale(random)) / 16);
    put_half(b, 82, std::abs(scale(random)) / 16);
  } else if (type == GgmlType::q3_k) {
    put_half(b, 108, scale(random) / 32);
  } else if (type == GgmlType::iq4_nl || type == GgmlType::iq4_xs) {
    put_half(b, 0, scale(random) / 128);
  } else {
    put_half(b, 0, k ? std::abs(scale(random)) / 64 : scale(random));
    if (type == GgmlType::q4_1 || type == GgmlType::q5_1 || k)
      put_half(b, 2, k ? std::abs(scale(random)) / 64 : scale(random));
  }
  return b;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST_CASE("half and bfloat16 bit patterns convert exactly", "[gguf]") {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    at::Half h;
    h.x = std::uint16_t(bits);
    const float expected = float(h);
    const float got = half_to_float(std::uint16_t(bits));
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(same_bits(got, expected));
    }
  }
  CHECK(bfloat16_to_float(0x3F80) == 1.0f);
  CHECK(bfloat16_to_float(0xC040) == -3.0f);
}

TEST_CASE("the block sizes are the format's", "[gguf]") {
  const std::vector<std::pair<GgmlType, std::size_t>> bytes = {
      {GgmlType::q4_0, 18},  {GgmlType::q4_1, 20},   {GgmlType::q5_0, 22},
      {GgmlType::q5_1, 24},  {GgmlType::q8_0, 34},   {GgmlType::q4_k, 144},
      {GgmlType::q5_k, 176}, {GgmlType::q6_k, 210},  {GgmlType::q2_k, 84},
      {GgmlType::q3_k, 110}, {GgmlType::iq4_nl, 18}, {GgmlType::iq4_xs, 136}};
  for (const auto& [type, size] : bytes) {
    const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(type));
    CHECK(info.block_bytes == size);
    CHECK(info.supported);
  }
  // Bits per weight: Q4_K 4.5, Q6_K 6.5625, Q8_0 8.5.
  CHECK(144.0 * 8 / 256 == 4.5);
  CHECK(ggml_bytes(*ggml_type_info(12), 512) == 288);
  CHECK_FALSE(ggml_bytes(*ggml_type_info(12), 100));
  CHECK(ggml_type_name(99) == "type 99");
  CHECK_FALSE(ggml_type_info(15)->supported);  // Q8_K: no model file has it
  CHECK(ggml_type_name(20) == "IQ4_NL");
  CHECK(ggml_type_name(23) == "IQ4_XS");
  CHECK(supported_ggml_types() ==
        "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, "
        "IQ4_NL, IQ4_XS and BF16");
}

TEST_CASE("GGUF types mold does not read parse, and are refused by name",
          "[gguf]") {
  // Block sizes of ggml-common.h's block_* structs.
  const std::vector<
      std::tuple<std::uint32_t, std::string, std::size_t, std::size_t>>
      types = {{16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
               {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
               {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
               {29, "IQ1_M", 256, 56},   {34, "TQ1_0", 256, 54},
               {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
               {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},
               {42, "Q2_0", 64, 18},     {24, "I8", 1, 1},
               {28, "F64", 1, 8}};
  TempDir dir;
  for (const auto& [id, name, elements, bytes] : types) {
    INFO(name);
    const GgmlTypeInfo* info = ggml_type_info(id);
    REQUIRE(info);
    CHECK(info->name == name);
    CHECK(info->block_elements == elements);
    CHECK(info->block_bytes == bytes);
    CHECK_FALSE(info->supported);
    // The file opens (molddiag inspect lists it); reading the tensor names
    // the type, the types mold reads and what to do.
    GgufWriter w;
    w.metadata_string("general.architecture", "z_image");
    w.tensor("layers.0.w", {std::uint64_t(elements), 2}, id,
             Block(2 * bytes, 0));
    const std::string path = dir.path() + "/" + name + ".gguf";
    w.write(path);
    const GgufFile file = GgufFile::open(path);
    CHECK_THROWS_WITH(
        load_quantized(file, *file.tensor("layers.0.w"), at::kCPU),
        Catch::Contains("tensor \"layers.0.w\" is " + name + " (ggml type " +
                        std::to_string(id) +
                        "), which mold does not read: it "
                        "reads F32, F16, Q4_0") &&
            Catch::Contains("convert the file to one of those"));
    CHECK_THROWS_WITH(
        dequantize_blocks(GgmlType(id), file.data(*file.tensor("layers.0.w")),
                          elements, std::vector<float>(elements).data()),
        Catch::Contains(name + " (ggml type"));
  }
  CHECK(ggml_type_name(31) == "Q4_0_4_4");
  CHECK(ggml_type_name(99) == "type 99");
}

TEST_CASE("hand-built blocks give the values worked out by hand", "[gguf]") {
  SECTION("Q4_0: d = 0.5, nibbles 0..15") {
    Block b(18, 0);
    put_half(b, 0, 0.5f);
    for (int j = 0; j < 16; ++j) b[2 + j] = std::uint8_t(j | ((15 - j) << 4));
    std::vector<float> y(32);
    dequantize_blocks(GgmlType::q4_0, b.data(), 32, y.data());
    CHECK(y[0] == -4.0f);   // (0 - 8) * 0.5
    CHECK(y[8] == 0.0f);    // (8 - 8) * 0.5
    CHECK(y[15] == 3.5f);   // (15 - 8) * 0.5
    CHECK(y[16] == 3.5f);   // high nibble of byte 0: 15
    CHECK(y[31] == -4.0f);  // high nibble of byte 15: 0
  }
  SECTION("Q4_1: d = 0.25, m = -1") {
    Block b(20, 0);
    put_half(b, 0, 0.25f);
    put_half(b, 2, -1.0f);
    b[4] = 0xF3;  // element 0: 3, element 16: 15
    std::vector<float> y(32);
    dequantize_blocks(GgmlType::q4_1, b.data(), 32, y.data());
    CHECK(y[0] == -0.25f);  // 3 * 0.25 - 1
    CHECK(y[16] == 2.75f);  // 15 * 0.25 - 1
    CHECK(y[1] == -1.0f);
  }
  SECTION("Q5_0: the fifth bit from qh") {
    Block b(22, 0);
    put_half(b, 0, 1.0f);
    b[2] = 0x01;   // bit 0: element 0 gets 16
    b[5] = 0x80;   // bit 31: element 31 gets 16
    b[6] = 0x0F;   // element 0 low nibble 15, element 16 high nibble 0
    b[21] = 0xF0;  // element 31 high nibble 15
    std::vector<float> y(32);
    dequantize_blocks(GgmlType::q5_0, b.data(), 32, y.data());
    CHECK(y[0] == 15.0f);    // (15 | 16) - 16
    CHECK(y[16] == -16.0f);  // (0 | 0) - 16
    CHECK(y[31] == 15.0f);   // (15 | 16) - 16
    CHECK(y[15] == -16.0f);
  }
  SECTION("Q8_0: signed bytes") {
    Block b(34, 0);
    put_half(b, 0, 0.125f);
    b[2] = 0x80;  // -128
    b[3] = 0x7F;  // 127
    std::vector<float> y(32);
    dequantize_blocks(GgmlType::q8_0, b.data(), 32, y.data());
    CHECK(y[0] == -16.0f);
    CHECK(y[1] == 15.875f);
  }
  SECTION("Q4_K: six-bit scales and mins, high sub-blocks included") {
    Block b(144, 0);
    put_half(b, 0, 1.0f);  // d
    put_half(b, 2, 0.5f);  // dmin
    b[4 + 0] = 5;          // sub-block 0: scale 5
    b[4 + 4] = 3;          // sub-block 0: min 3
    b[4 + 8] = 0x21;       // sub-block 4: scale low 1, min low 2
    b[4 + 0] |= 0x40;      // sub-block 4: scale high bits 01 -> 1 | 16 = 17
    b[4 + 4] |= 0x80;      // sub-block 4: min high bits 10 -> 2 | 32 = 34
    b[16 + 0] = 0x07;      // element 0: 7 (low nibble, sub-block 0)
    b[16 + 64] = 0x09;     // element 128: 9 (chunk 2 low nibble, sub-block 4)
    std::vector<float> y(256);
    dequantize_blocks(GgmlType::q4_k, b.data(), 256, y.data());
    CHECK(y[0] == 5.0f * 7 - 0.5f * 3);      // 33.5
    CHECK(y[128] == 17.0f * 9 - 0.5f * 34);  // 136
    CHECK(y[1] == -1.5f);                    // q 0: -dmin * 3
  }
  SECTION("Q6_K: d at the end, signed scales") {
    Block b(210, 0);
    put_half(b, 208, 0.5f);
    b[192 + 0] = std::uint8_t(std::int8_t(-2));  // scale of elements 0..15
    b[0] = 0x0A;                                 // element 0 low bits 10
    b[128] = 0x03;  // element 0 top bits 3: 10 | 48 = 58 -> 26
    std::vector<float> y(256);
    dequantize_blocks(GgmlType::q6_k, b.data(), 256, y.data());
    CHECK(y[0] == 0.5f * -2 * 26);   // -26
    CHECK(y[1] == 0.5f * -2 * -32);  // 32
  }
}

TEST_CASE("Q2_K, Q3_K, IQ4_NL and IQ4_XS blocks give ggml's own values",
          "[gguf]") {
  // tests/data/ggml_reference_blocks.txt: ggml's reference dequantization of
  // one block per type (the file says how it was made).
  std::ifstream in(std::string(mold::test::kDataDir) +
                   "/ggml_reference_blocks.txt");
  REQUIRE(in);
  std::map<std::string, Block> bytes;
  std::map<std::string, std::vector<std::uint32_t>> floats;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, kind;
    fields >> name >> kind;
    if (kind == "bytes") {
      std::string hex;
      fields >> hex;
      for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes[name].push_back(
            std::uint8_t(std::stoul(hex.substr(i, 2), nullptr, 16)));
    } else {
      std::string word;
      while (fields >> word)
        floats[name].push_back(std::uint32_t(std::stoul(word, nullptr, 16)));
    }
  }
  const std::vector<std::pair<std::string, GgmlType>> types = {
      {"Q2_K", GgmlType::q2_k},
      {"Q3_K", GgmlType::q3_k},
      {"IQ4_NL", GgmlType::iq4_nl},
      {"IQ4_XS", GgmlType::iq4_xs}};
  for (const auto& [name, type] : types) {
    INFO(name);
    const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(type));
    const Block& b = bytes[name];
    REQUIRE(b.size() == info.block_bytes);
    REQUIRE(floats[name].size() == info.block_elements);
    std::vector<float> y(info.block_elements);
    dequantize_blocks(type, b.data(), y.size(), y.data());
    const at::Tensor blob = at::from_blob(const_cast<std::uint8_t*>(b.data()),
                                          {std::int64_t(b.size())}, at::kByte)
                                .clone();
    const at::Tensor by_ops = dequantize_by_tensor_ops(
        make_quantized(type, {std::int64_t(y.size())}, blob));
    for (std::size_t e = 0; e < y.size(); ++e) {
      std::uint32_t got, ops;
      std::memcpy(&got, &y[e], 4);
      std::memcpy(&ops, by_ops.data_ptr<float>() + e, 4);
      INFO("element " << e);
      REQUIRE(got == floats[name][e]);
      REQUIRE(ops == floats[name][e]);
    }
  }
}

TEST_CASE("every element of random blocks is the format description's",
          "[gguf]") {
  std::mt19937 random(42);
  for (const GgmlType type : kQuantized) {
    const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(type));
    INFO(info.name);
    for (int trial = 0; trial < 50; ++trial) {
      const Block b = random_block(type, random);
      std::vector<float> y(info.block_elements);
      dequantize_blocks(type, b.data(), y.size(), y.data());
      for (std::size_t e = 0; e < y.size(); ++e) {
        const float expected = spec_value(type, b, e);
        if (!same_bits(y[e], expected)) {
          INFO("element " << e << ": " << y[e] << " vs " << expected);
          REQUIRE(same_bits(y[e], expected));
        }
      }
    }
  }
}

TEST_CASE(
    "dequantizing with tensor operations matches the reference bit for "
    "bit",
    "[gguf]") {
  std::mt19937 random(7);
  for (const GgmlType type : kQuantized) {
    const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(type));
    INFO(info.name);
    const std::int64_t rows = 3, blocks_per_row = 4;
    Block all;
    for (int i = 0; i < rows * blocks_per_row; ++i) {
      const Block b = random_block(type, random);
      all.insert(all.end(), b.begin(), b.end());
    }
    const std::int64_t cols =
        blocks_per_row * std::int64_t(info.block_elements);
    std::vector<float> reference(std::size_t(rows * cols));
    dequantize_blocks(type, all.data(), reference.size(), reference.data());
    const at::Tensor bytes =
        at::from_blob(all.data(), {std::int64_t(all.size())}, at::kByte)
            .clone();
    const QuantizedTensor q = make_quantized(type, {rows, cols}, bytes);
    CHECK(q.bytes() == all.size());
    // Both paths: the cpu's (the reference over the blocks in parallel) and
    // the tensor operations every other device runs.
    for (const at::Tensor& y : {dequantize(q), dequantize_by_tensor_ops(q)}) {
      REQUIRE(y.sizes() == at::IntArrayRef({rows, cols}));
      REQUIRE(y.scalar_type() == at::kFloat);
      CHECK(std::memcmp(y.contiguous().data_ptr<float>(), reference.data(),
                        reference.size() * 4) == 0);
    }
    CHECK(dequantize(q, at::kBFloat16)
              .equal(dequantize_by_tensor_ops(q, at::kBFloat16)));
  }
  CHECK_THROWS_AS(
      make_quantized(GgmlType::q4_0, {7, 32}, at::zeros({18}, at::kByte)),
      InvalidArgument);
  CHECK_THROWS_AS(
      make_quantized(GgmlType::q8_k, {256}, at::zeros({292}, at::kByte)),
      InvalidArgument);
}

TEST_CASE("a GGUF file is read back as written, its weights kept quantized",
          "[gguf]") {
  TempDir dir;
  std::mt19937 random(3);
  GgufWriter w;
  w.metadata_string("general.architecture", "qwen_image");
  w.metadata_u32("general.alignment", 32);
  w.metadata_f32("some.float", 0.5f);
  w.metadata_strings("tokenizer.list", {"a", "bc"});
  Block q4k, q6k;
  for (int i = 0; i < 6; ++i) {
    const Block b = random_block(GgmlType::q4_k, random);
    q4k.insert(q4k.end(), b.begin(), b.end());
  }
  for (int i = 0; i < 2; ++i) {
    const Block b = random_block(GgmlType::q6_k, random);
    q6k.insert(q6k.end(), b.begin(), b.end());
  }
  Block f32(4 * 5);
  for (int i = 0; i < 5; ++i) {
    const float v = float(i) - 1.5f;
    std::memcpy(f32.data() + 4 * i, &v, 4);
  }
  w.tensor("blk.0.attn.weight", {512, 3}, 12, q4k);  // 3 rows of 512 (Q4_K)
  w.tensor("blk.0.ff.weight", {256, 2}, 14, q6k);
  w.tensor("norm.bias", {5}, 0, f32);
  const std::string path = dir.path() + "/tiny.gguf";
  w.write(path);

  const GgufFile file = GgufFile::open(path);
  CHECK(file.version() == 3);
  CHECK(*file.find("general.architecture")->as_string() == "qwen_image");
  CHECK(file.find("general.alignment")->as_unsigned() == 32u);
  CHECK(file.find("nothing") == nullptr);
  const auto* list =
      std::get_if<std::vector<GgufValue>>(&file.find("tokenizer.list")->value);
  REQUIRE(list);
  CHECK(*(*list)[1].as_string() == "bc");
  REQUIRE(file.tensors().size() == 3);
  const GgufTensorInfo& attn = *file.tensor("blk.0.attn.weight");
  CHECK(attn.torch_shape() == std::vector<std::int64_t>{3, 512});
  CHECK(attn.bytes == q4k.size());
  CHECK(std::memcmp(file.data(attn), q4k.data(), q4k.size()) == 0);
  CHECK(file.tensor_bytes() == q4k.size() + q6k.size() + f32.size());

  // Kept quantized on the device: its bytes are the file's.
  const QuantizedTensor q = load_quantized(file, attn, at::Device(at::kCPU));
  CHECK(q.bytes() == attn.bytes);
  std::vector<float> reference(3 * 512);
  dequantize_blocks(GgmlType::q4_k, q4k.data(), reference.size(),
                    reference.data());
  CHECK(std::memcmp(dequantize(q).data_ptr<float>(), reference.data(),
                    reference.size() * 4) == 0);
  const at::Tensor bias =
      dequantize(load_quantized(file, *file.tensor("norm.bias"), at::kCPU));
  CHECK(bias[0].item<float>() == -1.5f);
  CHECK(bias[4].item<float>() == 2.5f);
}

TEST_CASE("a GGUF file written tensor by tensor is the one built in memory",
          "[gguf]") {
  // The published-scale kit streams its 11 GiB transformer this way.
  TempDir dir;
  std::mt19937 random(5);
  const std::vector<Block> blocks = {random_block(GgmlType::q4_0, random),
                                     Block(4 * 3, 0x11)};
  GgufWriter in_memory(3, 64), streamed(3, 64);
  for (GgufWriter* w : {&in_memory, &streamed})
    w->metadata_string("general.architecture", "qwen_image");
  in_memory.tensor("a.weight", {32, 1}, 2, blocks[0]);
  in_memory.tensor("a.bias", {3}, 0, blocks[1]);
  streamed.tensor_streamed("a.weight", {32, 1}, 2, blocks[0].size());
  streamed.tensor_streamed("a.bias", {3}, 0, blocks[1].size());
  const std::string path = dir.path() + "/streamed.gguf";
  streamed.write_streamed(path, [&](std::size_t i, std::ostream& out) {
    out.write(reinterpret_cast<const char*>(blocks[i].data()),
              std::streamsize(blocks[i].size()));
  });
  std::ifstream in(path, std::ios::binary);
  const Block written((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  CHECK(written == in_memory.bytes());
  CHECK(GgufFile::open(path).tensors().size() == 2);
  CHECK_THROWS_WITH(streamed.write_streamed(dir.path() + "/short.gguf",
                                            [](std::size_t, std::ostream&) {}),
                    Catch::Contains("wrote another size than it declared"));
}
TEST_CASE("hostile GGUF files are refused naming what is wrong", "[gguf]") {
  TempDir dir;
  auto valid = [] {
    GgufWriter w;
    w.metadata_string("general.architecture", "x");
    w.tensor("a", {32, 2}, 8, Block(68, 0));
    return w;
  };
  const std::vector<std::uint8_t> good = valid().bytes();
  auto with = [&](std::size_t at, std::vector<std::uint8_t> bytes) {
    std::vector<std::uint8_t> b = good;
    std::copy(bytes.begin(), bytes.end(), b.begin() + std::ptrdiff_t(at));
    return b;
  };
  auto u64 = [](std::uint64_t v) {
    std::vector<std::uint8_t> b(8);
    std::memcpy(b.data(), &v, 8);
    return b;
  };
  // Layout of `good`: magic 0, version 4, tensor count 8, metadata count 16,
  // key length 24, key 32.., type, string length, "x", then the tensor info.
  const std::size_t key_end = 32 + std::string("general.architecture").size();
  const std::size_t info = key_end + 4 + 8 + 1;
  const std::size_t dims = info + 8 + 1 + 4;
  const std::size_t type = dims + 16;
  const std::vector<std::pair<std::vector<std::uint8_t>, std::string>> cases = {
      {{'G', 'G', 'U'}, "too short"},
      {with(0, {'G', 'G', 'M', 'L'}), "not a GGUF file"},
      {with(4, {1, 0, 0, 0}), "version 1"},
      {with(8, u64(~0ull)), "tensor infos cannot fit"},
      {with(16, u64(1ull << 60)), "metadata entries cannot fit"},
      {with(24, u64(1ull << 62)), "more than the"},
      {with(key_end, {99, 0, 0, 0}), "unknown metadata value type 99"},
      {with(info + 8 + 1, {7, 0, 0, 0}), "7 dimensions"},
      {with(dims, u64(0)), "dimension of 0"},
      {with(dims, u64(1ull << 50)), "out of range"},
      {with(dims, u64(33)), "not a whole number of Q8_0 blocks"},
      {with(type, {77, 0, 0, 0}),
       "has ggml type id 77, which no ggml type mold knows has (the newest it "
       "knows is 42, Q2_0)"},
      {with(type, {31, 0, 0, 0}),
       "is Q4_0_4_4 (ggml type 31), a layout ggml removed from GGUF files"},
      {with(type + 4, u64(64)), "goes past the end"},
      {with(type + 4, u64(3)), "not a multiple of the alignment"},
      {std::vector<std::uint8_t>(good.begin(), good.end() - 10),
       "goes past the end"},
  };
  for (const auto& [bytes, says] : cases) {
    INFO(says);
    const std::string path = dir.path() + "/bad.gguf";
    GgufWriter::write(path, bytes);
    try {
      GgufFile::open(path);
      FAIL("accepted");
    } catch (const GgufError& e) {
      CHECK_THAT(e.what(), Catch::Contains(says));
      CHECK_THAT(e.what(), Catch::Contains("bad.gguf"));
    }
  }
  GgufWriter twice;
  twice.tensor("same", {32}, 8, Block(34, 0));
  twice.tensor("same", {32}, 8, Block(34, 0));
  twice.write(dir.path() + "/twice.gguf");
  CHECK_THROWS_WITH(GgufFile::open(dir.path() + "/twice.gguf"),
                    Catch::Contains("two tensors are named \"same\""));
  GgufWriter odd;
  odd.metadata_u32("general.alignment", 48);
  odd.write(dir.path() + "/odd.gguf");
  CHECK_THROWS_WITH(GgufFile::open(dir.path() + "/odd.gguf"),
                    Catch::Contains("power of two"));
  CHECK_THROWS_AS(GgufFile::open(dir.path()), Error);  // a directory

  // A metadata array of 2^22 + 1 one-byte values (4 MiB of file) would be
  // 2^22 parsed values: refused, not held.
  std::vector<std::uint8_t> big = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  auto put = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) big.push_back(std::uint8_t(v >> (8 * i)));
  };
  put(0, 8);  // tensors
  put(1, 8);  // metadata entries
  const std::string key = "tokenizer.scores";
  put(key.size(), 8);
  big.insert(big.end(), key.begin(), key.end());
  put(9, 4);  // an array
  put(0, 4);  // of u8
  const std::uint64_t count = (std::uint64_t(1) << 22) + 1;
  put(count, 8);
  big.resize(big.size() + count, 1);
  GgufWriter::write(dir.path() + "/big.gguf", big);
  CHECK_THROWS_WITH(GgufFile::open(dir.path() + "/big.gguf"),
                    Catch::Contains("big.gguf") &&
                        Catch::Contains("more than 4194304 values"));
}

TEST_CASE("a GGUF that gives a metadata key twice is refused naming it",
          "[gguf]") {
  // ggml's own reader refuses such a file; the first value is not "the" one.
  TempDir dir;
  GgufWriter w;
  w.metadata_string("general.architecture", "lumina2");
  w.metadata_u32("general.alignment", 32);
  w.metadata_string("general.architecture", "flux");
  w.tensor("a", {32, 2}, 8, Block(68, 0));
  const std::string path = dir.path() + "/twice.gguf";
  w.write(path);
  CHECK_THROWS_AS(mold::GgufFile::open(path), mold::GgufError);
  CHECK_THROWS_WITH(mold::GgufFile::open(path),
                    Catch::Contains("twice.gguf") &&
                        Catch::Contains("the metadata key "
                                        "\"general.architecture\" is given "
                                        "twice"));
}

TEST_CASE("mutated GGUF files never crash the reader", "[gguf]") {
  TempDir dir;
  GgufWriter w;
  w.metadata_string("general.architecture", "qwen_image");
  w.metadata_strings("list", {"a", "b"});
  w.tensor("t", {256, 2}, 12, Block(288, 1));
  const std::vector<std::uint8_t> good = w.bytes();
  const std::string text(good.begin(), good.end());
  std::mt19937_64 random(9);
  const int cases = mold::test::mutation_cases(2000);
  const std::string path = dir.path() + "/m.gguf";
  for (int i = 0; i < cases; ++i) {
    const std::string mutated = mold::test::mutate(text, random);
    GgufWriter::write(
        path, std::vector<std::uint8_t>(mutated.begin(), mutated.end()));
    try {
      const GgufFile file = GgufFile::open(path);
      for (const auto& t : file.tensors()) {
        const GgmlTypeInfo* type = ggml_type_info(t.type);
        if (type && type->supported && t.elements <= (1 << 16))
          dequantize(load_quantized(file, t, at::kCPU));
      }
    } catch (const GgufError&) {
    }
  }
}
