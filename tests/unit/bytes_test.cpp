#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>
#include <string>

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

TEST_CASE("parse_bytes reads decimal and scientific forms, never wraps",
          "[bytes]") {
  CHECK(parse_bytes("1.5e3 MiB") == 1500 * kMiB);
  CHECK(parse_bytes("2E+1 KiB") == 20 * kKiB);
  CHECK(parse_bytes("0.5 KiB") == 512);
  CHECK(parse_bytes("-0") == 0);
  CHECK_FALSE(try_parse_bytes("8 EiB").has_value());
  // The largest count, exactly; one more is refused, not saturated.
  CHECK(parse_bytes("9223372036854775807") == kMaxBytes);
  CHECK_FALSE(try_parse_bytes("9223372036854775808").has_value());
  CHECK_FALSE(try_parse_bytes("8388608 TiB").has_value());  // 2^63
  for (const char* huge : {"1e308 GiB", "16777216 TiB", "1e19",
                           "9223372036854775808000", "1e999999 bytes"}) {
    INFO(huge);
    CHECK_FALSE(try_parse_bytes(huge).has_value());
    CHECK_THROWS_WITH(parse_bytes(huge), Catch::Contains("more bytes than"));
  }
  for (const char* negative : {"-5 MiB", "-1", "-0.5 GiB"}) {
    INFO(negative);
    CHECK_FALSE(try_parse_bytes(negative).has_value());
    CHECK_THROWS_WITH(parse_bytes(negative), Catch::Contains("is negative"));
  }
}

TEST_CASE("byte products are checked, never wrapped or saturated", "[bytes]") {
  CHECK(checked_multiply(kGiB, 8, "x") == 8 * kGiB);
  CHECK(checked_multiply(0, kMaxBytes, "x") == 0);
  CHECK_THROWS_WITH(
      checked_multiply(Bytes(1) << 40, Bytes(1) << 40, "tensor 'w'"),
      Catch::Contains("tensor 'w'") &&
          Catch::Contains("1099511627776 x 1099511627776"));
  CHECK(bytes_from_double(1.6e9, "e") == 1600000000);
  for (double bad : {1e30, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    INFO(bad);
    CHECK_THROWS_AS(bytes_from_double(bad, "the estimate"), InvalidArgument);
  }
}
