#include <catch2/catch.hpp>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>

using namespace mold;

TEST_CASE("format_bytes follows PyTorch's format_size thresholds", "[bytes]") {
  CHECK(format_bytes(0) == "0 bytes");
  CHECK(format_bytes(1024) == "1024 bytes");
  CHECK(format_bytes(1025) == "1.00 KiB");
  CHECK(format_bytes(kMiB) == "1024.00 KiB");
  CHECK(format_bytes(kMiB + 1) == "1.00 MiB");
  CHECK(format_bytes(978 * kMiB) == "978.00 MiB");
  CHECK(format_bytes(kGiB) == "1024.00 MiB");
  CHECK(format_bytes(Bytes(5.01 * kGiB)) == "5.01 GiB");
  CHECK(format_bytes(2048 * kGiB) == "2048.00 GiB");
}

TEST_CASE("parse_bytes reads what people and PyTorch write", "[bytes]") {
  CHECK(parse_bytes("2359296 bytes") == 2359296);
  CHECK(parse_bytes("2359296") == 2359296);
  CHECK(parse_bytes("512B") == 512);
  CHECK(parse_bytes("978.00 MiB") == 978 * kMiB);
  CHECK(parse_bytes("8GiB") == 8 * kGiB);
  CHECK(parse_bytes("8 gib") == 8 * kGiB);
  CHECK(parse_bytes("  20.00 MiB ") == 20 * kMiB);
  CHECK(parse_bytes("1,048,576 bytes") == kMiB);
  // PyTorch's older texts print "GB" for 2^30.
  CHECK(parse_bytes("3.00 GB") == 3 * kGiB);
  CHECK(parse_bytes("1.5 KB") == 1536);
  CHECK(parse_bytes("5.01 GiB") == Bytes(std::llround(5.01 * double(kGiB))));
}

TEST_CASE("parse_bytes rejects what is not a byte count, naming it",
          "[bytes]") {
  for (const char* bad :
       {"", "GiB", "five GiB", "5 parsecs", "-1 GiB", "1.2.3 MiB", "1e400"}) {
    INFO(bad);
    CHECK_FALSE(try_parse_bytes(bad).has_value());
    CHECK_THROWS_AS(parse_bytes(bad), ParseError);
  }
  CHECK_THROWS_WITH(parse_bytes("5 parsecs"),
                    Catch::Contains("'5 parsecs'") && Catch::Contains("8 GiB"));
}

TEST_CASE(
    "format then parse returns the value within the rounding of two decimals",
    "[bytes]") {
  for (Bytes b : {Bytes(1), Bytes(1000), Bytes(123456), Bytes(5) * kGiB + 12345,
                  Bytes(48) * kGiB}) {
    const Bytes back = parse_bytes(format_bytes(b));
    const double error = std::abs(double(back) - double(b)) / double(b);
    INFO(b << " -> " << format_bytes(b) << " -> " << back);
    CHECK(error < 0.005);
  }
}
