// PNG output and input: pixels and text chunks round trip, writes are atomic,
// and hostile files are refused with an Error naming them. PNGs in other
// formats (gray, 16-bit, palette, alpha, compressed text) are made by hand
// here (stored deflate blocks), independent of libpng.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/runtime/png.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace mold;
using Catch::Matchers::Contains;
using mold::test::TempDir;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::uint8_t> gradient(int width, int height) {
  std::vector<std::uint8_t> rgb(std::size_t(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &rgb[(std::size_t(y) * width + x) * 3];
      p[0] = std::uint8_t(x * 37 + y);
      p[1] = std::uint8_t(y * 91 + 3);
      p[2] = std::uint8_t((x ^ y) * 13);
    }
  return rgb;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// ---- hand-made PNGs ---------------------------------------------------------

std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes) {
    crc ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string be32(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(std::uint32_t(data.size())) + type + data +
         be32(crc32(type + data));
}

/// A zlib stream of stored (uncompressed) deflate blocks.
std::string zlib_stored(const std::string& data) {
  std::string out = "\x78\x01";
  std::size_t at = 0;
  do {
    const std::size_t n = std::min<std::size_t>(65535, data.size() - at);
    const bool last = at + n == data.size();
    out += char(last ? 1 : 0);
    out += char(n & 0xFF);
    out += char(n >> 8);
    out += char(~n & 0xFF);
    out += char((~n >> 8) & 0xFF);
    out += data.substr(at, n);
    at += n;
  } while (at < data.size());
  std::uint32_t a = 1, b = 0;
  for (const char ch : data) {
    a = (a + static_cast<unsigned char>(ch)) % 65521;
    b = (b + a) % 65521;
  }
  return out + be32((b << 16) | a);
}

const std::string kSignature = "\x89PNG\r\n\x1a\n";

std::string ihdr(std::uint32_t width, std::uint32_t height, int depth,
                 int color) {
  return chunk("IHDR", be32(width) + be32(height) + char(depth) + char(color) +
                           std::string(3, '\0'));
}

/// A whole PNG: IHDR, `extra` chunks, one IDAT of `rows` (each row's bytes
/// without the filter byte, which is 0), IEND.
std::string png(std::uint32_t width, std::uint32_t height, int depth, int color,
                const std::vector<std::string>& rows,
                const std::string& extra = "") {
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;
  return kSignature + ihdr(width, height, depth, color) + extra +
         chunk("IDAT", zlib_stored(raw)) + chunk("IEND", "");
}

std::vector<std::uint8_t> bytes(std::initializer_list<int> values) {
  std::vector<std::uint8_t> out;
  for (int v : values) out.push_back(std::uint8_t(v));
  return out;
}

}  // namespace

TEST_CASE("write_png and read_png round trip pixels and text", "[png]") {
  TempDir dir;
  const fs::path path = fs::path(dir.path()) / "out.png";
  const int width = 37, height = 21;
  const auto rgb = gradient(width, height);
  const std::vector<PngText> text = {
      {"prompt", "a red fox in the snow \xF0\x9F\xA6\x8A, \xE9\x9B\xAA"},
      {"seed", "42"},
      {"multi line", "first line\nsecond line"},
      {"Comment", ""},
      {"Gr\xC3\xBC\xC3\x9F"
       "e",
       "caf\xC3\xA9"},  // Latin-1 key, UTF-8 value
  };
  write_png(path, rgb.data(), width, height, text);

  const PngImage image = read_png(path);
  CHECK(image.width == width);
  CHECK(image.height == height);
  CHECK(image.rgb == rgb);
  REQUIRE(image.text.size() == text.size());
  for (const PngText& entry : text) {
    INFO(entry.key);
    REQUIRE(image.text.count(entry.key) == 1);
    CHECK(image.text.at(entry.key) == entry.value);
  }

  // ASCII values as tEXt, the others as iTXt; Latin-1 keys stored as Latin-1.
  const std::string file = read(path);
  const char seed_chunk[] =
      "tEXtseed\0"
      "42";
  CHECK(file.find(std::string(seed_chunk, sizeof seed_chunk - 1)) !=
        std::string::npos);
  const char lines_chunk[] = "tEXtmulti line\0first line\nsecond line";
  CHECK(file.find(std::string(lines_chunk, sizeof lines_chunk - 1)) !=
        std::string::npos);
  CHECK(file.find("iTXtprompt") != std::string::npos);
  CHECK(file.find("tEXtprompt") == std::string::npos);
  CHECK(file.find("iTXtGr\xFC\xDF"
                  "e") != std::string::npos);
}

TEST_CASE("write_png writes a 1x1 image and replaces an existing file",
          "[png]") {
  TempDir dir;
  const fs::path path = fs::path(dir.path()) / "one.png";
  const auto first = bytes({10, 20, 30});
  write_png(path, first.data(), 1, 1, {});
  CHECK(read_png(path).rgb == first);
  const auto second = bytes({200, 100, 0});
  write_png(path, second.data(), 1, 1, {{"seed", "1"}});
  const PngImage image = read_png(path);
  CHECK(image.rgb == second);
  CHECK(image.text.at("seed") == "1");
  CHECK(files_in(dir.path()) == std::vector<std::string>{"one.png"});
}

TEST_CASE("a failed write leaves the existing file untouched", "[png]") {
  TempDir dir;
  const fs::path path = fs::path(dir.path()) / "keep.png";
  const auto rgb = gradient(4, 4);
  write_png(path, rgb.data(), 4, 4, {{"seed", "7"}});
  const std::string before = read(path);

  struct Case {
    std::string key;
    std::string value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "v", "is empty"},
      {std::string(80, 'k'), "v", "80 characters"},
      {" lead", "v", "starts or ends with a space"},
      {"trail ", "v", "starts or ends with a space"},
      {"two  spaces", "v", "two spaces in a row"},
      {"tab\tkey", "v", "control"},
      {"emoji \xF0\x9F\xA6\x8A", "v", "outside Latin-1"},
      {"bad \xFF utf8", "v", "not valid UTF-8"},
      {"nul", std::string("a\0b", 3), "NUL"},
      {"badvalue", "caf\xE9", "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    INFO(c.expected);
    try {
      write_png(path, rgb.data(), 4, 4, {{"seed", "8"}, {c.key, c.value}});
      FAIL("write_png accepted a bad text entry");
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Contains(c.expected));
      CHECK_THAT(e.what(), Contains("PNG text"));
    }
    CHECK(read(path) == before);
    CHECK(files_in(dir.path()) == std::vector<std::string>{"keep.png"});
  }
  // 79 characters is the most a key may have.
  write_png(path, rgb.data(), 4, 4, {{std::string(79, 'k'), "v"}});
  CHECK(read_png(path).text.at(std::string(79, 'k')) == "v");
}

TEST_CASE("write_png refuses bad sizes and no pixels", "[png]") {
  TempDir dir;
  const fs::path path = fs::path(dir.path()) / "bad.png";
  const auto rgb = gradient(2, 2);
  CHECK_THROWS_AS(write_png(path, rgb.data(), 0, 2, {}), InvalidArgument);
  CHECK_THROWS_AS(write_png(path, rgb.data(), 2, -1, {}), InvalidArgument);
  CHECK_THROWS_AS(write_png(path, rgb.data(), kMaxPngSide + 1, 1, {}),
                  InvalidArgument);
  CHECK_THROWS_WITH(write_png(path, rgb.data(), 20000, 20000, {}),
                    Contains("20000x20000") && Contains("bad.png"));
  CHECK_THROWS_AS(write_png(path, nullptr, 2, 2, {}), InvalidArgument);
  CHECK(files_in(dir.path()).empty());
}

TEST_CASE("write_png refuses a directory target", "[png]") {
  TempDir dir;
  const fs::path target = fs::path(dir.path()) / "out.png";
  fs::create_directory(target);
  const auto rgb = gradient(2, 2);
  CHECK_THROWS_WITH(write_png(target, rgb.data(), 2, 2, {}),
                    Contains("out.png") && Contains("a directory"));
  CHECK(fs::is_directory(target));
  CHECK(files_in(dir.path()) == std::vector<std::string>{"out.png"});
  // A missing parent directory is an Error naming the path, too.
  CHECK_THROWS_AS(
      write_png(fs::path(dir.path()) / "no" / "x.png", rgb.data(), 2, 2, {}),
      Error);
}

TEST_CASE("read_png converts other formats to 8-bit RGB", "[png]") {
  TempDir dir;
  SECTION("8-bit gray") {
    const auto path =
        dir.write("g.png", png(2, 1, 8, 0, {std::string("\x00\xFF", 2)}));
    const PngImage image = read_png(path);
    CHECK(image.rgb == bytes({0, 0, 0, 255, 255, 255}));
  }
  SECTION("1-bit gray") {
    // 0b1010'0000: pixels 1, 0, 1
    const auto path = dir.write("g1.png", png(3, 1, 1, 0, {"\xA0"}));
    CHECK(read_png(path).rgb == bytes({255, 255, 255, 0, 0, 0, 255, 255, 255}));
  }
  SECTION("16-bit gray and RGB reduced to 8 bits") {
    const auto gray = dir.write(
        "g16.png", png(2, 1, 16, 0, {std::string("\xFF\xFF\x80\x00", 4)}));
    CHECK(read_png(gray).rgb == bytes({255, 255, 255, 128, 128, 128}));
    const auto rgb = dir.write(
        "rgb16.png",
        png(1, 1, 16, 2, {std::string("\x00\x00\x12\x34\xFF\xFF", 6)}));
    CHECK(read_png(rgb).rgb == bytes({0, 18, 255}));
  }
  SECTION("gray with alpha, RGBA: alpha dropped") {
    const auto ga = dir.write("ga.png", png(1, 1, 8, 4, {"\x40\x10"}));
    CHECK(read_png(ga).rgb == bytes({64, 64, 64}));
    const auto rgba = dir.write(
        "rgba.png",
        png(2, 1, 8, 6, {std::string("\x01\x02\x03\x00\x04\x05\x06\xFF", 8)}));
    CHECK(read_png(rgba).rgb == bytes({1, 2, 3, 4, 5, 6}));
  }
  SECTION("palette with transparency") {
    const std::string palette =
        chunk("PLTE", std::string("\xFF\x00\x00\x00\x80\x00", 6));
    const std::string trns = chunk("tRNS", std::string(1, '\0'));
    const auto path = dir.write("p.png", png(3, 2, 8, 3,
                                             {std::string("\x00\x01\x00", 3),
                                              std::string("\x01\x01\x00", 3)},
                                             palette + trns));
    const PngImage image = read_png(path);
    CHECK(image.width == 3);
    CHECK(image.height == 2);
    CHECK(image.rgb == bytes({255, 0, 0, 0, 128, 0, 255, 0, 0,  //
                              0, 128, 0, 0, 128, 0, 255, 0, 0}));
  }
  SECTION("tEXt, zTXt and iTXt (compressed too), before and after IDAT") {
    std::string raw = '\0' + std::string("\x01\x02\x03", 3);
    const std::string file =
        kSignature + ihdr(1, 1, 8, 2) +
        chunk("tEXt", std::string("Title\0Caf\xE9", 10)) +
        chunk("zTXt", std::string("Long\0\0", 6) + zlib_stored("squeezed")) +
        chunk("IDAT", zlib_stored(raw)) +
        chunk("iTXt", std::string("Fox\0\0\0en\0\0", 10) + "\xF0\x9F\xA6\x8A") +
        chunk("iTXt", std::string("Packed\0\x01\0\0\0", 11) +
                          zlib_stored("caf\xC3\xA9")) +
        chunk("IEND", "");
    const PngImage image = read_png(dir.write("t.png", file));
    CHECK(image.rgb == bytes({1, 2, 3}));
    CHECK(image.text.at("Title") == "Caf\xC3\xA9");  // Latin-1 -> UTF-8
    CHECK(image.text.at("Long") == "squeezed");
    CHECK(image.text.at("Fox") == "\xF0\x9F\xA6\x8A");
    CHECK(image.text.at("Packed") == "caf\xC3\xA9");
  }
}

TEST_CASE("read_png refuses hostile files with an Error naming them",
          "[png][hostile]") {
  TempDir dir;
  const auto rgb = gradient(16, 9);
  const fs::path good = fs::path(dir.path()) / "good.png";
  write_png(good, rgb.data(), 16, 9, {{"prompt", "a fox"}});
  const std::string file = read(good);

  SECTION("every truncation") {
    for (std::size_t n = 0; n < file.size(); ++n) {
      INFO("truncated to " << n << " of " << file.size() << " bytes");
      const auto path = dir.write("cut.png", file.substr(0, n));
      try {
        (void)read_png(path);
        FAIL("a truncated PNG was read");
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Contains("cut.png"));
      }
    }
  }
  SECTION("a truncated image says so") {
    const auto path = dir.write("short.png", file.substr(0, file.size() / 2));
    CHECK_THROWS_WITH(read_png(path),
                      Contains("short.png") && Contains("truncated"));
  }
  SECTION("garbage") {
    CHECK_THROWS_WITH(
        read_png(dir.write("junk.png", "this is not a png at all")),
        Contains("junk.png") && Contains("not a PNG"));
    std::string noise(4096, '\0');
    for (std::size_t i = 0; i < noise.size(); ++i)
      noise[i] = char((i * 2654435761u) >> 13);
    CHECK_THROWS_AS(read_png(dir.write("noise.png", kSignature + noise)),
                    Error);
  }
  SECTION("flipped bytes") {
    for (std::size_t at = 8; at < file.size(); at += 7) {
      std::string broken = file;
      broken[at] = char(broken[at] ^ 0x5A);
      const auto path = dir.write("flip.png", broken);
      try {
        (void)read_png(path);  // an ancillary chunk's CRC may only warn
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Contains("flip.png"));
      }
    }
  }
  SECTION("a header claiming 100000x100000 pixels") {
    const auto path = dir.write(
        "huge.png", png(100000, 100000, 8, 2, {std::string(4, '\0')}));
    CHECK_THROWS_WITH(read_png(path), Contains("huge.png") &&
                                          Contains("100000x100000") &&
                                          Contains("limit"));
  }
  SECTION("a header beyond libpng's limits") {
    const auto path = dir.write(
        "wide.png", png(0x7FFFFFFFu, 1, 8, 2, {std::string(4, '\0')}));
    CHECK_THROWS_WITH(read_png(path), Contains("wide.png"));
    const auto zero = dir.write("zero.png", png(0, 0, 8, 2, {}));
    CHECK_THROWS_WITH(read_png(zero), Contains("zero.png"));
  }
  SECTION("a bad bit depth") {
    const auto path = dir.write("depth.png", png(1, 1, 7, 2, {"abc"}));
    CHECK_THROWS_WITH(read_png(path), Contains("depth.png"));
  }
  SECTION("not a regular file, or missing") {
    CHECK_THROWS_AS(read_png(dir.path()), InvalidArgument);
    CHECK_THROWS_WITH(read_png(fs::path(dir.path()) / "missing.png"),
                      Contains("missing.png"));
  }
}
