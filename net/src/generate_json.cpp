#include "mold/net/generate_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <mold/base/error.hpp>
#include <mold/plan/generate_schema.hpp>
#include <string>

#include "mold/net/api_error.hpp"

namespace mold::net {

using Json = nlohmann::json;

namespace {

std::string shown(const Json& v) {
  return v.is_number() ? v.dump() : json_type_name(v);
}

[[noreturn]] void invalid(const GenerateField& field, const std::string& why) {
  throw InvalidArgument(fmt::format("{}: {}", field.name, why));
}

}  // namespace

void read_generate_fields(const Json& body, GenerateSettings& settings,
                          std::size_t max_text_bytes) {
  settings.naming = FieldNaming::json;
  for (const GenerateField& field : generate_fields()) {
    const auto it = body.find(std::string(field.name));
    if (it == body.end()) {
      if (field.required) invalid(field, "is required (a string)");
      continue;
    }
    const Json& value = *it;
    switch (field.kind) {
    case FieldKind::text: {
      if (!value.is_string())
        invalid(field, fmt::format("should be a string, not {}",
                                   json_type_name(value)));
      const std::string& text = value.get_ref<const std::string&>();
      if (text.size() > max_text_bytes)
        invalid(field, fmt::format("is {} bytes; at most {}", text.size(),
                                   max_text_bytes));
      set_text(settings, field, text);
      break;
    }
    case FieldKind::whole: {
      const std::string why =
          fmt::format("should be a whole number {}", field.range_text());
      if (!value.is_number_integer())
        invalid(field,
                fmt::format("{}, not {}{}", why, shown(value),
                            value.is_null() ? " (leave the field out for the "
                                              "model's default)"
                                            : ""));
      const bool in_range =
          value.is_number_unsigned()
              ? value.get<std::uint64_t>() <= std::uint64_t(field.high) &&
                    value.get<std::uint64_t>() >= std::uint64_t(field.low)
              : value.get<std::int64_t>() >= std::int64_t(field.low) &&
                    value.get<std::int64_t>() <= std::int64_t(field.high);
      if (!in_range)
        invalid(field, fmt::format("{}, not {}", why, value.dump()));
      settings.*std::get<int GenerateSettings::*>(field.member) =
          int(value.get<std::int64_t>());
      break;
    }
    case FieldKind::real: {
      const std::string why =
          fmt::format("should be a number {}", field.range_text());
      if (!value.is_number() || !std::isfinite(value.get<double>()) ||
          value.get<double>() < field.low || value.get<double>() > field.high)
        invalid(field,
                fmt::format("{}, not {}{}", why, shown(value),
                            value.is_null() ? " (leave the field out for the "
                                              "model's default)"
                                            : ""));
      settings.*std::get<std::optional<double> GenerateSettings::*>(
                    field.member) = value.get<double>();
      break;
    }
    case FieldKind::seed: {
      if (!value.is_number_unsigned() &&
          !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
        invalid(field, fmt::format("should be a whole number {}, not {}",
                                   field.range_text(), shown(value)));
      settings.*std::get<std::uint64_t GenerateSettings::*>(field.member) =
          value.get<std::uint64_t>();
      break;
    }
    }
  }
  check_generate_settings(settings);
}

Json generate_fields_json(const GenerateSettings& settings, int image) {
  const GenerateSettings defaults;
  Json body = Json::object();
  for (const GenerateField& field : generate_fields()) {
    const std::string name(field.name);
    std::visit(
        [&](auto member) {
          const auto& value = settings.*member;
          using Value = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<Value, std::optional<double>> ||
                        std::is_same_v<Value, std::optional<std::string>>) {
            if (value) body[name] = *value;
          } else if constexpr (std::is_same_v<Value, std::uint64_t>) {
            body[name] = value + std::uint64_t(image);  // the seed
          } else {
            if (field.required || value != defaults.*member) body[name] = value;
          }
        },
        field.member);
  }
  body.erase("batch");  // one request per image: the seed says which
  return body;
}

}  // namespace mold::net
