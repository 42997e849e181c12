#include "mold/plan/field_naming.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "mold/plan/generate_schema.hpp"

namespace mold {

namespace {

/// The request's own fields, beside the schema's: JSON name and flag.
struct OwnField {
  std::string_view name, flag;
};
constexpr OwnField kOwnFields[] = {
    {"images", "--image"}, {"tiny", "--tiny"}, {"model", "MODEL"}};

}  // namespace

std::string field_label(std::string_view path, FieldNaming naming) {
  if (naming == FieldNaming::json) return std::string(path);
  // "images[2]": the field and, on the command line, which of its repeats.
  std::string_view name = path;
  std::string repeat;
  if (const auto open = path.find('[');
      open != std::string_view::npos && path.back() == ']') {
    name = path.substr(0, open);
    const std::string index(path.substr(open + 1, path.size() - open - 2));
    repeat = fmt::format(" #{}", std::strtoull(index.c_str(), nullptr, 10) + 1);
  }
  if (const GenerateField* field = find_generate_field(name))
    return "--" + std::string(field->flag) + repeat;
  for (const auto& own : kOwnFields)
    if (own.name == name) return std::string(own.flag) + repeat;
  return std::string(path);
}

}  // namespace mold
