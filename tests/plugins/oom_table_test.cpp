// The table of real error texts (tests/data/oom_texts.json) through the
// registered classifiers: is_oom right on every one, backend and requested
// bytes (within 1%) too.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/test_registry.hpp"

namespace {
nlohmann::json load_table() {
  std::ifstream in(std::string(mold::test::kDataDir) + "/oom_texts.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}
}  // namespace

TEST_CASE("every real error text of the table is classified right",
          "[oom][table]") {
  const auto table = load_table();
  REQUIRE(table.size() >= 150);
  int ooms = 0, lookalikes = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& row = table[i];
    const std::string text = row["text"];
    INFO("entry " << i << " (" << row["source"].get<std::string>() << "):\n"
                  << text);
    const auto report = mold::test::real_plugins().classify({text, "", {}});
    CHECK(report.has_value() == row["is_oom"].get<bool>());
    if (!report || !row["is_oom"].get<bool>()) {
      ++lookalikes;
      continue;
    }
    ++ooms;
    CHECK(report->backend == row["backend"].get<std::string>());
    if (row["requested_bytes"].is_null()) {
      CHECK_FALSE(report->requested);
    } else {
      const double expected = row["requested_bytes"].get<double>();
      REQUIRE(report->requested);
      CHECK(std::abs(double(*report->requested) - expected) <= 0.01 * expected);
    }
  }
  CHECK(ooms >= 120);
  CHECK(lookalikes >= 25);
}
