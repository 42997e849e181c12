#pragma once
/// A generate request's options for mold run and molddiag's drivers, made from
/// the schema (mold/plan/generate_schema.hpp): names, ranges and help come from
/// its table, so a new field is an option without touching a command.
/// Torch-free.

#include <boost/program_options.hpp>
#include <mold/plan/generate_settings.hpp>
#include <string_view>
#include <vector>

namespace mold::tools {

/// Adds the schema's fields as options storing into `settings` (which must
/// outlive the parsing): all of them, or those whose JSON names are in `only`.
/// A value already in `settings` (a batch of 1, a prompt) is the option's
/// default; a required field without one is a required option.
void add_generate_options(boost::program_options::options_description& options,
                          GenerateSettings& settings,
                          const std::vector<std::string_view>& only = {});

}  // namespace mold::tools
