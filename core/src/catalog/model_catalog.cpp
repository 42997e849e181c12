#include "mold/catalog/model_catalog.hpp"

#include <cmath>

#include "config/toml_reader.hpp"

namespace mold {

namespace {

std::string required_string(const std::filesystem::path& file,
                            const toml::table& table, const std::string& prefix,
                            const char* key) {
  const toml::node* node = table.get(key);
  const auto value = node ? node->value<std::string>() : std::nullopt;
  if (!value || value->empty())
    throw ConfigError(
        file, node ? toml_reader::line_of(*node) : toml_reader::line_of(table),
        toml_reader::key_path(prefix, key), "must be a non-empty string");
  return *value;
}

std::string optional_string(const std::filesystem::path& file,
                            const toml::table& table, const std::string& prefix,
                            const char* key) {
  if (!table.contains(key)) return {};
  return required_string(file, table, prefix, key);
}

Bytes component_bytes(const std::filesystem::path& file, const toml::node& node,
                      const std::string& key) {
  if (const auto integer = node.value_exact<int64_t>(); integer && *integer > 0)
    return Bytes(*integer);
  if (const auto text = node.value_exact<std::string>())
    if (const auto bytes = try_parse_bytes(*text); bytes && *bytes > 0)
      return *bytes;
  throw ConfigError(file, toml_reader::line_of(node), key,
                    "must be a positive byte count: an integer or a string "
                    "like \"20.3 GiB\"");
}

/// A string, or an array of strings (at least one), at `key`.
std::vector<std::string> string_list(const std::filesystem::path& file,
                                     const toml::node& node,
                                     const std::string& key) {
  std::vector<std::string> values;
  if (const auto text = node.value_exact<std::string>()) {
    values.push_back(*text);
  } else if (const toml::array* array = node.as_array()) {
    for (const toml::node& item : *array) {
      const auto text = item.value_exact<std::string>();
      if (!text || text->empty())
        throw ConfigError(file, toml_reader::line_of(item), key,
                          "must hold non-empty strings");
      values.push_back(*text);
    }
  }
  if (values.empty())
    throw ConfigError(file, toml_reader::line_of(node), key,
                      "must be a class name or a list of them");
  return values;
}

const toml::array& array_of_tables(const std::filesystem::path& file,
                                   const toml::table& table,
                                   const std::string& prefix, const char* key) {
  const toml::node* node = table.get(key);
  if (!node || !node->is_array_of_tables())
    throw ConfigError(
        file, node ? toml_reader::line_of(*node) : toml_reader::line_of(table),
        toml_reader::key_path(prefix, key),
        std::string("must be an array of tables: [[") +
            toml_reader::key_path(prefix, key) + "]]");
  return *node->as_array();
}

}  // namespace

ModelFamily load_model_family(const std::filesystem::path& file) {
  const toml::table root = toml_reader::parse(file);
  toml_reader::require_known_keys(file, root, "", {"family", "models"});
  const toml::node* family_node = root.get("family");
  if (!family_node || !family_node->is_table())
    throw ConfigError(file, 0, "family",
                      "is missing: the file needs a [family] table");
  const toml::table& family_table = *family_node->as_table();
  toml_reader::require_known_keys(file, family_table, "family",
                                  {"name", "description"});

  ModelFamily family;
  family.name = required_string(file, family_table, "family", "name");
  family.description =
      optional_string(file, family_table, "family", "description");

  for (const auto& model_node : array_of_tables(file, root, "", "models")) {
    const toml::table& model_table = *model_node.as_table();
    toml_reader::require_known_keys(
        file, model_table, "models",
        {"name", "description", "default_variant", "variants",
         "pipeline_classes", "component_classes"});
    ModelInfo model;
    model.name = required_string(file, model_table, "models", "name");
    const std::string prefix = "models." + model.name;
    model.description =
        optional_string(file, model_table, prefix, "description");
    model.default_variant =
        required_string(file, model_table, prefix, "default_variant");
    if (const toml::node* node = model_table.get("pipeline_classes"))
      model.pipeline_classes =
          string_list(file, *node, prefix + ".pipeline_classes");
    if (const toml::node* node = model_table.get("component_classes")) {
      if (!node->is_table())
        throw ConfigError(file, toml_reader::line_of(*node),
                          prefix + ".component_classes",
                          "must be a table of component = class name(s)");
      for (const auto& [component, classes] : *node->as_table())
        model.component_classes.emplace_back(
            std::string(component.str()),
            string_list(
                file, classes,
                prefix + ".component_classes." + std::string(component.str())));
    }
    for (const auto& variant_node :
         array_of_tables(file, model_table, prefix, "variants")) {
      const toml::table& variant_table = *variant_node.as_table();
      toml_reader::require_known_keys(file, variant_table, prefix + ".variants",
                                      {"name", "source", "components"});
      ModelVariant variant;
      variant.name =
          required_string(file, variant_table, prefix + ".variants", "name");
      const std::string vprefix = prefix + "." + variant.name;
      variant.source = required_string(file, variant_table, vprefix, "source");
      const toml::node* components = variant_table.get("components");
      if (!components || !components->is_table() ||
          components->as_table()->empty())
        throw ConfigError(file, toml_reader::line_of(variant_table),
                          vprefix + ".components",
                          "must be a table of component = bytes");
      for (const auto& [name, size] : *components->as_table())
        variant.components.push_back(
            {std::string(name.str()),
             component_bytes(
                 file, size,
                 vprefix + ".components." + std::string(name.str()))});
      model.variants.push_back(std::move(variant));
    }
    if (!model.variant(model.default_variant))
      throw ConfigError(file, toml_reader::line_of(model_table),
                        prefix + ".default_variant",
                        "names '" + model.default_variant +
                            "', which is not one of its variants");
    family.models.push_back(std::move(model));
  }
  return family;
}

}  // namespace mold
