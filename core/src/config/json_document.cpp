#include "config/json_document.hpp"

#include <fmt/format.h>

#include <fstream>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"

namespace mold::json_document {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void raise(const Fail& fail, const std::string& problem) {
  fail(problem);
  // `fail` must throw; should one return, the reader still stops here.
  throw std::logic_error(problem);
}

}  // namespace

json read_object(const fs::path& file, const Rules& rules, const Fail& fail) {
  std::error_code error;
  const auto status = fs::status(file, error);
  if (!fs::exists(status)) raise(fail, "no such file: " + rules.when_missing);
  if (!fs::is_regular_file(status))
    raise(fail, fmt::format("is {}, not a regular file: give the path of {}",
                            describe_file_type(file), rules.kind));
  const std::uintmax_t size = fs::file_size(file, error);
  if (error)
    raise(fail, fmt::format("cannot read its size ({}); check the path",
                            error.message()));
  if (size > rules.max_bytes)
    raise(fail, fmt::format("is {} bytes, more than the {} {} may have: is it "
                            "the right file?",
                            size, rules.max_bytes, rules.kind));
  std::ifstream in(file, std::ios::binary);
  if (!in) raise(fail, "cannot be opened for reading; check its permissions");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size))
    raise(fail,
          "could not be read to the end; check that nothing is "
          "writing it");
  return parse_object(text, rules, fail);
}

json parse_object(std::string_view text, const Rules& rules, const Fail& fail) {
  if (const std::size_t depth = json_nesting_depth(text);
      depth > kMaxJsonNesting)
    raise(fail, fmt::format("nests arrays and objects {} deep; {} holds no "
                            "more than {}: is it the right file?",
                            depth, rules.kind, kMaxJsonNesting));
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at
    // line 3, column 5: ..."; keep what follows the bracket.
    std::string what = e.what();
    const auto bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    raise(fail, fmt::format("is not valid JSON ({}): it is damaged or cut "
                            "short; download or write {} again",
                            what, rules.kind));
  }
  if (!root.is_object())
    raise(fail,
          fmt::format("holds a JSON {} at the top level, not a JSON object: "
                      "is it {}?",
                      root.type_name(), rules.kind));
  return root;
}

namespace {

/// Appends `value` as compact JSON to `out` until `out` reaches `limit`
/// characters: an array of millions of numbers costs no more than its first
/// few. Arrays and objects are walked, scalars dumped (a string cut first).
void append_bounded(const json& value, std::size_t limit, std::string& out) {
  if (out.size() >= limit) return;
  if (value.is_array() || value.is_object()) {
    out += value.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() < limit;
         ++it) {
      if (!first) out += ',';
      first = false;
      if (value.is_object()) {
        append_bounded(json(it.key()), limit, out);
        out += ':';
      }
      append_bounded(*it, limit, out);
    }
    out += value.is_array() ? ']' : '}';
    return;
  }
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    out += json(text.substr(0, limit))
               .dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += value.dump();
}

}  // namespace

std::string shown(const json& value) {
  std::string text;
  append_bounded(value, 61, text);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace mold::json_document
