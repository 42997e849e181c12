// The OOM-text readers on thousands of mutated real error texts
// (tests/data/oom_texts.json; MOLD_MUTATION_CASES for more): classification
// never throws, and every number it reports is one mold can represent.
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/bytes.hpp>
#include <mold/plugin/oom_advice.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "support/mutations.hpp"
#include "support/paths.hpp"
#include "support/test_registry.hpp"

TEST_CASE("mutated OOM texts are classified without throwing or wrapping",
          "[oom][mutation]") {
  std::ifstream in(std::string(mold::test::kDataDir) + "/oom_texts.json");
  const auto table = nlohmann::json::parse(in);
  std::vector<std::string> texts;
  for (const auto& entry : table) texts.push_back(entry["text"]);
  REQUIRE(texts.size() > 100);
  const auto& registry = mold::test::real_plugins();
  const int cases = mold::test::mutation_cases(4000);
  std::mt19937_64 random(1);
  for (int i = 0; i < cases; ++i) {
    const std::string text =
        mold::test::mutate(texts[std::size_t(random() % texts.size())], random);
    INFO("case " << i);
    std::optional<mold::OomReport> report;
    REQUIRE_NOTHROW(report = registry.classify({text, "", {}}));
    if (!report) continue;
    for (const auto& value :
         {report->requested, report->capacity, report->free, report->allocated,
          report->reserved_unallocated, report->process_in_use,
          report->other_processes, report->other_allocations})
      if (value) CHECK(*value <= mold::kMaxBytes);
    CHECK_NOTHROW(mold::oom_label(*report));
    CHECK_NOTHROW(mold::advise(registry, *report, nullptr));
  }
}
