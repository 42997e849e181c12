#include "mold/plan/generate_schema.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "mold/base/error.hpp"
#include "mold/estimate/workload.hpp"

namespace mold {

namespace {

using S = GenerateSettings;
constexpr double kMaxSeed = double(std::numeric_limits<std::uint64_t>::max());

}  // namespace

const std::vector<GenerateField>& generate_fields() {
  static const std::vector<GenerateField> fields = {
      {"prompt", "prompt", FieldKind::text, 0, 0, "what to draw", true,
       &S::prompt},
      {"negative_prompt", "negative", FieldKind::text, 0, 0,
       "negative prompt (when the guidance turns guidance on; Qwen-Image: "
       "given, even empty, it turns true CFG on with --guidance above 1)",
       false, &S::negative_prompt},
      {"width", "width", FieldKind::whole, 16, 16384,
       "image width in pixels (default: the model's)", false, &S::width},
      {"height", "height", FieldKind::whole, 16, 16384,
       "image height in pixels (default: the model's)", false, &S::height},
      {"steps", "steps", FieldKind::whole, 1, 1000,
       "denoising steps (default: the model's)", false, &S::steps},
      {"guidance", "guidance", FieldKind::real, 0, 100,
       "classifier-free guidance scale; guidance runs the negative prompt too "
       "(default: the model's; Z-Image-Turbo: 0, none)",
       false, &S::guidance},
      {"seed", "seed", FieldKind::seed, 0, kMaxSeed,
       "noise seed of the first image; image i uses seed + i", false, &S::seed},
      {"batch", "batch", FieldKind::whole, 1, double(kMaxBatch),
       "images, seeds seed, seed + 1, ...", false, &S::batch},
  };
  return fields;
}

std::string GenerateField::range_text() const {
  if (kind == FieldKind::seed)
    return fmt::format("from 0 to {}",
                       std::numeric_limits<std::uint64_t>::max());
  return fmt::format("from {} to {}", low, high);
}

const GenerateField* find_generate_field(std::string_view name) {
  for (const auto& field : generate_fields())
    if (field.name == name) return &field;
  return nullptr;
}

std::string generate_field_names() {
  std::string names;
  for (const auto& field : generate_fields())
    names += (names.empty() ? "" : ", ") + std::string(field.name);
  return names;
}

const std::string* text_value(const GenerateSettings& settings,
                              const GenerateField& field) {
  if (const auto* text = std::get_if<std::string S::*>(&field.member))
    return &(settings.**text);
  if (const auto* optional =
          std::get_if<std::optional<std::string> S::*>(&field.member)) {
    const std::optional<std::string>& value = settings.**optional;
    return value ? &*value : nullptr;
  }
  throw InvalidArgument(
      fmt::format("request field {} is not text", field.name));
}

void set_text(GenerateSettings& settings, const GenerateField& field,
              std::string value) {
  if (const auto* text = std::get_if<std::string S::*>(&field.member))
    settings.** text = std::move(value);
  else
    settings.*std::get<std::optional<std::string> S::*>(field.member) =
        std::move(value);
}

void check_generate_settings(const GenerateSettings& settings) {
  const auto label = [&settings](const GenerateField& field) {
    return field_label(field.name, settings.naming);
  };
  for (const auto& field : generate_fields()) {
    if (field.kind == FieldKind::text) {
      const std::string* text = text_value(settings, field);
      if (!text) continue;
      const std::string& value = *text;
      if (const auto nul = value.find('\0'); nul != std::string::npos)
        throw InvalidArgument(
            fmt::format("{}: has a NUL byte at byte {}; a prompt is text",
                        label(field), nul));
      if (field.required && value.empty())
        throw InvalidArgument(fmt::format("{}: is empty", label(field)));
    } else if (const auto* whole = std::get_if<int S::*>(&field.member)) {
      const int value = settings.**whole;
      if (value == 0 && field.low > 0) continue;  // the model's default
      if (value < field.low || value > field.high)
        throw InvalidArgument(fmt::format("{} {}: give a whole number {}",
                                          label(field), value,
                                          field.range_text()));
    } else if (const auto* real =
                   std::get_if<std::optional<double> S::*>(&field.member)) {
      const std::optional<double>& value = settings.**real;
      if (value && !(*value >= field.low && *value <= field.high))
        throw InvalidArgument(fmt::format("{} {}: give a number {}",
                                          label(field), *value,
                                          field.range_text()));
    }
  }
  const std::uint64_t last_offset =
      settings.batch > 1 ? std::uint64_t(settings.batch - 1) : 0;
  if (settings.seed > std::numeric_limits<std::uint64_t>::max() - last_offset) {
    const GenerateField& seed = *find_generate_field("seed");
    throw InvalidArgument(fmt::format(
        "{} {} with a batch of {}: the last image's seed would pass {}; give "
        "a seed of at most {}",
        label(seed), settings.seed, settings.batch,
        std::numeric_limits<std::uint64_t>::max(),
        std::numeric_limits<std::uint64_t>::max() - last_offset));
  }
}

}  // namespace mold
