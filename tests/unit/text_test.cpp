// base/text: text from outside made safe to show, and the shared helpers.

#include <catch2/catch.hpp>
#include <mold/base/text.hpp>
#include <mold/base/untrusted_json.hpp>

using namespace mold;

TEST_CASE("control characters and invalid UTF-8 are escaped, the rest kept",
          "[text]") {
  CHECK(escape_control("plain text\nand a tab\t") == "plain text\nand a tab\t");
  CHECK(escape_control("\x1b[31mred\x7f") == "\\x1b[31mred\\x7f");
  CHECK(escape_control("caf\xc3\xa9") == "caf\xc3\xa9");  // valid UTF-8 kept
  CHECK(escape_control("bad \xff byte") == "bad \\xff byte");
  CHECK(is_valid_utf8("caf\xc3\xa9"));
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST_CASE("JSON nesting is measured without recursing, strings skipped",
          "[text]") {
  using mold::json_nesting_depth;
  CHECK(json_nesting_depth("") == 0);
  CHECK(json_nesting_depth("3") == 0);
  CHECK(json_nesting_depth("{}") == 1);
  CHECK(json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})") == 4);
  CHECK(json_nesting_depth(R"({"a": "[[[{{{", "b": "\"[["})") == 1);
  CHECK(json_nesting_depth("]]]]{") == 1);  // stray closers never go below 0
  CHECK(json_nesting_depth(std::string(1000000, '[')) == 1000000);
}

TEST_CASE("the shared string helpers", "[text]") {
  CHECK(list_text({16, 56, 56}) == "[16, 56, 56]");
  CHECK(list_text({}) == "[]");
  CHECK(join_names({"text_encoder", "transformer"}) ==
        "text_encoder, transformer");
  CHECK(join_names({}).empty());
  CHECK(starts_with("models--Qwen--Qwen-Image", "models--"));
  CHECK_FALSE(starts_with("mod", "models--"));
  CHECK(ends_with("model.safetensors.index.json", ".index.json"));
  CHECK_FALSE(ends_with("json", ".index.json"));
  CHECK(ends_with("x", ""));
  CHECK(ascii_lower("Qwen-Image-EDIT_2511") == "qwen-image-edit_2511");
  CHECK(ascii_lower("\xc3\x89t\xc3\xa9") == "\xc3\x89t\xc3\xa9");  // bytes kept
}

TEST_CASE("untrusted JSON past the nesting limit is discarded, not parsed",
          "[text]") {
  CHECK(parse_untrusted_json(R"({"a": [1, 2]})").at("a").size() == 2);
  CHECK(parse_untrusted_json("not json").is_discarded());
  // 100,000 levels: what a hostile server or cache file sends; dump() of it
  // would overflow the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(parse_untrusted_json(deep).is_discarded());
  const std::string ok =
      std::string(kMaxJsonNesting, '[') + std::string(kMaxJsonNesting, ']');
  CHECK_FALSE(parse_untrusted_json(ok).is_discarded());
}
