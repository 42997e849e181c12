// JsonConfig: values of a config.json, with errors that name the file, the
// key, what was found and what was expected.

#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/config/json_config.hpp>

#include "support/process.hpp"

using mold::JsonConfig;

TEST_CASE("JsonConfig reads typed values and nested objects", "[json]") {
  const JsonConfig c = JsonConfig::parse(
      R"({"dim": 3840, "eps": 1e-5, "qk_norm": true, "name": "x",
          "axes": [32, 48, 48], "nested": {"a": {"b": 2}}, "none": null})",
      "config.json");
  CHECK(c.integer("dim") == 3840);
  CHECK(c.number("eps") == 1e-5);
  CHECK(c.number("dim") == 3840.0);  // integers are numbers
  CHECK(c.boolean("qk_norm"));
  CHECK(c.string("name") == "x");
  CHECK(c.integers("axes") == std::vector<std::int64_t>{32, 48, 48});
  CHECK(c.object("nested").object("a").integer("b") == 2);
  CHECK(c.integer_or("none", 7) == 7);  // null means the default
  CHECK(c.integer_or("absent", 8) == 8);
  CHECK_FALSE(c.has_value("none"));
  CHECK(c.has("none"));
}

TEST_CASE("JsonConfig errors name the file, the key and the value", "[json]") {
  const JsonConfig c = JsonConfig::parse(
      R"({"dim": 3.5, "heads": "30", "big": 99999999999, "axes": [1, "2"],
          "nested": {"a": {"b": false}}})",
      "transformer/config.json");
  CHECK_THROWS_WITH(c.integer("dim"),
                    Catch::Contains("transformer/config.json") &&
                        Catch::Contains("dim") && Catch::Contains("3.5") &&
                        Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(c.integer("heads"), Catch::Contains("a string"));
  CHECK_THROWS_WITH(c.integer("big", 1, 1 << 20),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(c.integer("missing"), Catch::Contains("is missing"));
  CHECK_THROWS_WITH(c.integers("axes"), Catch::Contains("axes[1]"));
  CHECK_THROWS_WITH(c.object("nested").object("a").integer("b"),
                    Catch::Contains("nested.a.b"));
  CHECK_THROWS_AS(c.object("dim"), mold::ConfigError);
}

TEST_CASE("JsonConfig refuses files that are no JSON object", "[json]") {
  mold::test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return dir.path() + "/" + name;
  };
  CHECK_THROWS_WITH(
      JsonConfig::read(write("a.json", "{\"dim\": ")),
      Catch::Contains("a.json") && Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(JsonConfig::read(write("b.json", "[1, 2]")),
                    Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(JsonConfig::read(dir.path() + "/absent.json"),
                    Catch::Contains("absent.json"));
  CHECK_THROWS_WITH(JsonConfig::read(dir.path()),
                    Catch::Contains("not a regular file"));
  // Deep nesting must not overflow the stack with a crash.
  std::string deep(100000, '[');
  CHECK_THROWS_AS(JsonConfig::read(write("deep.json", deep)),
                  mold::ConfigError);
  // A valid document nested 300,000 deep is refused before it is parsed or
  // shown (a message's dump() would recurse through it).
  const std::string nested =
      "{\"a\": " + std::string(300000, '[') + std::string(300000, ']') + "}";
  CHECK_THROWS_WITH(JsonConfig::read(write("nested.json", nested)),
                    Catch::Contains("nested.json") &&
                        Catch::Contains("nests arrays and objects 300001 "
                                        "deep") &&
                        Catch::Contains("no more than 64"));
  CHECK_NOTHROW(JsonConfig::parse(
      "{\"a\": " + std::string(60, '[') + std::string(60, ']') + "}", "x"));
}
