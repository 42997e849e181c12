#include "mold/config/json_config.hpp"

#include <fmt/format.h>

#include <cmath>

#include "config/json_document.hpp"
#include "mold/base/error.hpp"

namespace mold {

namespace fs = std::filesystem;
using nlohmann::json;

struct JsonConfig::Document {
  fs::path origin;
  json root;
};

namespace {

constexpr std::uintmax_t kMaxConfigFile = 64u << 20;

const json& as_json(const void* node) {
  return *static_cast<const json*>(node);
}

std::string type_name(const json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a number";
  if (value.is_boolean()) return "a boolean";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "a list";
  if (value.is_object()) return "an object";
  return "null";
}

using json_document::shown;

}  // namespace

JsonConfig::JsonConfig(std::shared_ptr<const Document> document,
                       const void* node, std::string path)
    : document_(std::move(document)), node_(node), path_(std::move(path)) {}

namespace {

const json_document::Rules& config_rules() {
  static const json_document::Rules rules{
      kMaxConfigFile, "a JSON config",
      "give the path of a JSON file (a model directory's config.json)"};
  return rules;
}

}  // namespace

JsonConfig JsonConfig::read(const fs::path& file) {
  auto document = std::make_shared<Document>();
  document->origin = file;
  document->root = json_document::read_object(
      file, config_rules(), [&](const std::string& problem) {
        throw ConfigError(file, 0, "", problem);
      });
  const void* node = &document->root;
  return JsonConfig(std::move(document), node, "");
}

JsonConfig JsonConfig::parse(std::string_view text, fs::path origin) {
  auto document = std::make_shared<Document>();
  document->origin = std::move(origin);
  document->root = json_document::parse_object(
      text, config_rules(), [&](const std::string& problem) {
        throw ConfigError(document->origin, 0, "", problem);
      });
  const void* node = &document->root;
  return JsonConfig(std::move(document), node, "");
}

const fs::path& JsonConfig::origin() const { return document_->origin; }
const std::string& JsonConfig::path() const { return path_; }

#define MOLD_JSON_LOOKUP(key)                                            \
  const json& object = as_json(node_);                                   \
  const std::string dotted =                                             \
      path_.empty() ? std::string(key) : path_ + "." + std::string(key); \
  auto found = object.find(std::string(key));                            \
  const json* value = found == object.end() ? nullptr : &*found

namespace {

[[noreturn]] void fail(const fs::path& origin, const std::string& key,
                       const std::string& problem) {
  throw ConfigError(origin, 0, key, problem);
}

[[noreturn]] void absent(const fs::path& origin, const std::string& key) {
  fail(origin, key, "is missing; the file must give it");
}

[[noreturn]] void wrong(const fs::path& origin, const std::string& key,
                        const json& value, const char* expected) {
  fail(origin, key,
       fmt::format("is {} ({}), expected {}", type_name(value), shown(value),
                   expected));
}

std::int64_t to_integer(const fs::path& origin, const std::string& key,
                        const json& value, std::int64_t min, std::int64_t max) {
  if (!value.is_number_integer()) wrong(origin, key, value, "an integer");
  std::int64_t v = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > std::uint64_t(INT64_MAX))
      fail(origin, key,
           fmt::format("is {}, out of range [{}, {}]", u, min, max));
    v = std::int64_t(u);
  } else {
    v = value.get<std::int64_t>();
  }
  if (v < min || v > max)
    fail(origin, key, fmt::format("is {}, out of range [{}, {}]", v, min, max));
  return v;
}

double to_number(const fs::path& origin, const std::string& key,
                 const json& value) {
  if (!value.is_number()) wrong(origin, key, value, "a number");
  const double v = value.get<double>();
  if (!std::isfinite(v)) fail(origin, key, "is not a finite number");
  return v;
}

}  // namespace

bool JsonConfig::has(std::string_view key) const {
  return as_json(node_).contains(std::string(key));
}

bool JsonConfig::has_value(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  (void)dotted;
  return value && !value->is_null();
}

std::vector<std::string> JsonConfig::keys() const {
  std::vector<std::string> names;
  for (const auto& item : as_json(node_).items()) names.push_back(item.key());
  return names;
}

std::int64_t JsonConfig::integer(std::string_view key, std::int64_t min,
                                 std::int64_t max) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  return to_integer(origin(), dotted, *value, min, max);
}

std::int64_t JsonConfig::integer_or(std::string_view key, std::int64_t fallback,
                                    std::int64_t min, std::int64_t max) const {
  MOLD_JSON_LOOKUP(key);
  if (!value || value->is_null()) return fallback;
  return to_integer(origin(), dotted, *value, min, max);
}

double JsonConfig::number(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  return to_number(origin(), dotted, *value);
}

double JsonConfig::number_or(std::string_view key, double fallback) const {
  MOLD_JSON_LOOKUP(key);
  if (!value || value->is_null()) return fallback;
  return to_number(origin(), dotted, *value);
}

bool JsonConfig::boolean(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_boolean()) wrong(origin(), dotted, *value, "true or false");
  return value->get<bool>();
}

bool JsonConfig::boolean_or(std::string_view key, bool fallback) const {
  MOLD_JSON_LOOKUP(key);
  if (!value || value->is_null()) return fallback;
  if (!value->is_boolean()) wrong(origin(), dotted, *value, "true or false");
  return value->get<bool>();
}

std::string JsonConfig::string(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_string()) wrong(origin(), dotted, *value, "a string");
  return value->get<std::string>();
}

std::string JsonConfig::string_or(std::string_view key,
                                  std::string fallback) const {
  MOLD_JSON_LOOKUP(key);
  if (!value || value->is_null()) return fallback;
  if (!value->is_string()) wrong(origin(), dotted, *value, "a string");
  return value->get<std::string>();
}

std::vector<std::int64_t> JsonConfig::integers(std::string_view key,
                                               std::int64_t min,
                                               std::int64_t max) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_array()) wrong(origin(), dotted, *value, "a list of integers");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < value->size(); ++i)
    out.push_back(to_integer(origin(), fmt::format("{}[{}]", dotted, i),
                             (*value)[i], min, max));
  return out;
}

std::vector<double> JsonConfig::numbers(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_array()) wrong(origin(), dotted, *value, "a list of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < value->size(); ++i)
    out.push_back(
        to_number(origin(), fmt::format("{}[{}]", dotted, i), (*value)[i]));
  return out;
}

std::vector<std::string> JsonConfig::strings(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_array()) wrong(origin(), dotted, *value, "a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_string())
      wrong(origin(), fmt::format("{}[{}]", dotted, i), item, "a string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

JsonConfig JsonConfig::object(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  if (!value->is_object()) wrong(origin(), dotted, *value, "an object");
  return JsonConfig(document_, value, dotted);
}

std::string JsonConfig::dump(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  return value->dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string JsonConfig::shown(std::string_view key) const {
  MOLD_JSON_LOOKUP(key);
  if (!value) absent(origin(), dotted);
  return json_document::shown(*value);
}

std::string JsonConfig::dump() const {
  return as_json(node_).dump(-1, ' ', false, json::error_handler_t::replace);
}

void JsonConfig::fail(std::string_view key, const std::string& problem) const {
  throw ConfigError(
      origin(), 0,
      path_.empty() ? std::string(key) : path_ + "." + std::string(key),
      problem);
}

}  // namespace mold
