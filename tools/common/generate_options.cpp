#include "common/generate_options.hpp"

#include <algorithm>
#include <mold/plan/generate_schema.hpp>
#include <string>

#include "common/options.hpp"

namespace po = boost::program_options;

namespace mold::tools {

void add_generate_options(po::options_description& options,
                          GenerateSettings& settings,
                          const std::vector<std::string_view>& only) {
  for (const GenerateField& field : generate_fields()) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), field.name) == only.end())
      continue;
    const std::string flag(field.flag), help(field.help);
    switch (field.kind) {
    case FieldKind::text: {
      // Set when given, even empty: an optional text field tells the two.
      const std::string* current = text_value(settings, field);
      auto* value = po::value<std::string>()->notifier(
          [&settings, &field](const std::string& text) {
            set_text(settings, field, text);
          });
      if (current && !current->empty())
        value->default_value(*current);
      else if (field.required)
        value->required();
      options.add_options()(flag.c_str(), value, help.c_str());
      break;
    }
    case FieldKind::whole: {
      int& target = settings.*std::get<int GenerateSettings::*>(field.member);
      add_ranged_int(options, flag.c_str(), &target, int(field.low),
                     int(field.high), help,
                     target ? std::optional<int>(target) : std::nullopt);
      break;
    }
    case FieldKind::real:
      add_ranged_real(
          options, flag.c_str(),
          &(settings.*
            std::get<std::optional<double> GenerateSettings::*>(field.member)),
          field.low, field.high, help);
      break;
    case FieldKind::seed:
      add_seed_option(options, flag.c_str(),
                      &(settings.*std::get<std::uint64_t GenerateSettings::*>(
                                      field.member)),
                      help);
      break;
    }
  }
}

}  // namespace mold::tools
