// The safetensors header parser (torch-free): every malformed header is a
// SafetensorsError that names its origin and the tensor. The file-level
// errors (absent, FIFO, a missing tensor) are tested with SafetensorsFile in
// the torch tier.
#include <catch2/catch.hpp>
#include <cstdint>
#include <mold/tensor/safetensors_header.hpp>
#include <string>

using mold::parse_safetensors_header;
using mold::SafetensorsError;

namespace {
/// A safetensors file's bytes from a raw header and data.
std::string raw_file(const std::string& header, const std::string& data,
                     std::int64_t claimed_header = -1) {
  std::string bytes(8, '\0');
  const std::uint64_t n =
      claimed_header < 0 ? header.size() : std::uint64_t(claimed_header);
  for (int i = 0; i < 8; ++i) bytes[i] = char((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

mold::SafetensorsHeader parse(const std::string& bytes) {
  return parse_safetensors_header(bytes.data(), bytes.size(), "x.safetensors");
}
}  // namespace

TEST_CASE("a safetensors header gives its entries, metadata and data section",
          "[safetensors]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt","n":3},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[8,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const auto parsed = parse(raw_file(header, std::string(16, '\0')));
  REQUIRE(parsed.entries.size() == 2);
  CHECK(parsed.entries.at("b").dtype == "BF16");
  CHECK(parsed.entries.at("b").shape == std::vector<std::int64_t>{2, 2});
  CHECK(parsed.entries.at("b").begin == 8);
  CHECK(parsed.entries.at("a").end == 8);
  CHECK(parsed.metadata.at("format") == "pt");
  CHECK(parsed.metadata.at("n") == "3");  // a non-string value as its JSON
  CHECK(parsed.data_offset == 8 + header.size());
  CHECK(parsed.data_size == 16);
  CHECK(mold::safetensors_dtype_size("BF16") == 2);
  CHECK(mold::safetensors_dtype_size("F8_E4M3") == 1);
  CHECK(mold::safetensors_dtype_size("F8_E8M0") == 0);
}

TEST_CASE("a key repeated inside a tensor's entry is not a second tensor",
          "[safetensors]") {
  // Only the header's own keys are tensor names.
  const std::string header =
      R"({"__metadata__":{"a":"1"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const auto parsed = parse(raw_file(header, std::string(4, '\0')));
  CHECK(parsed.entries.size() == 1);
  CHECK(parsed.metadata.at("a") == "1");
}

TEST_CASE("broken safetensors headers name the origin and the tensor",
          "[safetensors]") {
  struct Case {
    std::string name, bytes;
    const char* expected;
  };
  const std::string ok =
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const Case cases[] = {
      {"short", "abc", "truncated: 3 bytes"},
      {"claims_more", raw_file(ok, std::string(8, '\0'), 4096),
       "truncated, or not a safetensors file: the header says 4096"},
      {"bad_json", raw_file("{\"w\": [", ""), "the JSON header is invalid"},
      {"not_object", raw_file("[1]", ""), "the JSON header is not an object"},
      {"deep",
       raw_file(R"({"__metadata__":{"x":)" + std::string(200000, '[') +
                    std::string(200000, ']') + "}}",
                ""),
       "the JSON header nests 200002 deep"},
      {"metadata", raw_file(R"({"__metadata__":[1]})", ""),
       "__metadata__ is not an object"},
      {"no_offsets", raw_file(R"({"w":{"dtype":"F32","shape":[2]}})", ""),
       "tensor 'w': needs dtype, shape and data_offsets"},
      {"dtype",
       raw_file(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})",
                std::string(8, '\0')),
       "tensor 'w': unsupported dtype 'Q4'"},
      {"out_of_range", raw_file(ok, std::string(4, '\0')),
       "tensor 'w': data_offsets [0, 8] out of range"},
      {"size",
       raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                std::string(8, '\0')),
       "8 bytes for shape [3] of F32: expected 12"},
      {"overlap",
       raw_file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           std::string(12, '\0')),
       "overlaps"},
      {"negative",
       raw_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})",
                ""),
       "tensor 'w': shape [-1] has a dimension below 0 or above 2^63 - 1"},
      {"huge_dimension",
       raw_file(
           R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]}})",
           ""),
       "shape [18446744073709551615] has a dimension below 0"},
      {"negative_offsets",
       raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})",
                std::string(4, '\0')),
       "tensor 'w': data_offsets [0,-4] must be byte offsets from 0 to 2^63 - "
       "1"},
      {"fraction",
       raw_file(R"({"w":{"dtype":"F32","shape":[8.5],"data_offsets":[0,32]}})",
                std::string(32, '\0')),
       "tensor 'w': shape [8.5] must be an array of whole numbers"},
      {"wraps",
       raw_file(
           R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,0]}})",
           ""),
       "is more bytes than any file holds (2^63 or more)"},
      {"wraps_to_zero",
       raw_file(
           R"({"w":{"dtype":"I8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
           ""),
       "is more bytes than any file holds (2^63 or more)"},
      {"offsets",
       raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.5]}})",
                std::string(4, '\0')),
       "tensor 'w': data_offsets must be [begin, end], two whole numbers"},
      {"three_offsets",
       raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",
                std::string(8, '\0')),
       "tensor 'w': data_offsets must be [begin, end]"},
      {"string_shape",
       raw_file(R"({"w":{"dtype":"F32","shape":"[1]","data_offsets":[0,4]}})",
                std::string(4, '\0')),
       "tensor 'w': shape \"[1]\" must be an array of whole numbers"},
      {"dtype_number",
       raw_file(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})",
                std::string(4, '\0')),
       "tensor 'w': dtype must be a string"},
      // The parser would keep the last of the two: refused by the name.
      {"twice",
       raw_file(
           R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           std::string(8, '\0')),
       "the header names tensor 'w' twice"},
      {"twice_apart",
       raw_file(
           R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
           std::string(4, '\0')),
       "the header names tensor 'w' twice"},
      {"metadata_twice",
       raw_file(R"({"__metadata__":{},"__metadata__":{}})", ""),
       "the header names the section '__metadata__' twice"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK_THROWS_AS(parse(c.bytes), SafetensorsError);
    CHECK_THROWS_WITH(parse(c.bytes), Catch::Contains("x.safetensors: ") &&
                                          Catch::Contains(c.expected));
  }
}
