// molddiag inspect: what a checkpoint file holds, without libtorch and
// without reading a tensor: its tensors by type and bytes, and for every
// family's component whose layout it matches, the layout and what mold would
// convert, or why it does not fit.

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/components.hpp>
#include <mold/catalog/weight_layout.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct InspectRequest {
  tools::HostOptions host;
  std::vector<std::string> files;
  bool json = false;
};

struct TypeTotal {
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;
};

struct Fit {
  std::string family, component, layout, description, problem;
  std::size_t parameters = 0, dropped = 0;
  std::vector<std::pair<std::string, std::string>> implies;
  std::string missing_hint;
};

tools::Parsed<InspectRequest> parse(const std::vector<std::string>& args) {
  tools::Parsed<InspectRequest> parsed;
  InspectRequest& r = parsed.request;
  po::options_description options(
      "molddiag inspect FILE [FILE ...] [options]\n\n"
      "What a checkpoint holds, read from its header alone (a .safetensors "
      "file,\n"
      "a .gguf, a folder of shards; several files are one checkpoint, as a "
      "text GGUF\n"
      "and its mmproj): its tensors by type and bytes, and which family's "
      "component\n"
      "it fits, in which layout (docs/models.md), with what mold converts "
      "on load.\n"
      "Exit: 0 read (whether or not it fits); 1 a file that is not a "
      "checkpoint;\n"
      "2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "file", po::value(&r.files)->composing()->required(),
      "the checkpoint's file(s)")("json", po::bool_switch(&r.json),
                                  "print JSON (fields in docs/molddiag.md)");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("file", -1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options, &positional);
  return parsed;
}

std::vector<Fit> fits(const mold::Registry& registry,
                      const mold::TensorListing& listing) {
  std::vector<Fit> out;
  for (const mold::ModelFamily* family : registry.families())
    for (const char* component :
         {mold::components::kTransformer, mold::components::kVae,
          mold::components::kTextEncoder}) {
      Fit fit;
      fit.family = family->name;
      fit.component = component;
      try {
        const auto mapping = mold::detect_layout(
            family->layouts, component, listing,
            fmt::format("the {} {}", family->name, component));
        if (!mapping) continue;
        fit.layout = mapping->layout;
        fit.description = mapping->description;
        fit.parameters = mapping->recipes.size();
        fit.dropped = mapping->dropped.size();
        fit.implies = mapping->implies;
        fit.missing_hint = mapping->missing_hint;
      } catch (const mold::Error& e) {
        fit.problem = e.what();
      }
      out.push_back(std::move(fit));
    }
  return out;
}

}  // namespace

int inspect_command(const std::vector<std::string>& args) {
  const auto parsed = parse(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const InspectRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  std::vector<std::filesystem::path> paths(request.files.begin(),
                                           request.files.end());
  const mold::TensorListing listing = mold::read_tensor_listing(paths);
  std::map<std::string, TypeTotal> types;
  const mold::StoredTensor* largest = nullptr;
  for (const auto& t : listing.tensors()) {
    auto& total = types[t.type];
    ++total.tensors;
    total.bytes += t.bytes;
    if (!largest || t.bytes > largest->bytes) largest = &t;
  }
  // fp8 files: the weights with a scale, and every tensor set aside beside
  // the weights (the scales, input scales, markers).
  std::size_t scaled = 0;
  for (const auto& t : listing.tensors())
    if (listing.scale_of(t)) ++scaled;
  const std::size_t companions = listing.companions().size();
  const std::vector<Fit> found = fits(*host.registry, listing);
  if (request.json) {
    nlohmann::json by_type = nlohmann::json::object();
    for (const auto& [type, total] : types)
      by_type[type] = {{"tensors", total.tensors}, {"bytes", total.bytes}};
    nlohmann::json fit_list = nlohmann::json::array();
    for (const auto& f : found) {
      nlohmann::json implies = nlohmann::json::object();
      for (const auto& [key, value] : f.implies) implies[key] = value;
      fit_list.push_back(
          {{"family", f.family},
           {"component", f.component},
           {"layout", f.layout.empty() ? nlohmann::json(nullptr)
                                       : nlohmann::json(f.layout)},
           {"description", f.description},
           {"parameters", f.parameters},
           {"dropped", f.dropped},
           {"implies", implies},
           {"missing", f.missing_hint},
           {"problem", f.problem}});
    }
    std::vector<std::string> files;
    for (const auto& file : listing.files()) files.push_back(file.string());
    tools::print_json(
        std::cout,
        {{"files", files},
         {"gguf_architectures", listing.gguf_architectures()},
         {"tensors", listing.tensors().size()},
         {"bytes", listing.bytes()},
         {"types", by_type},
         {"scaled_weights", scaled},
         {"companions", companions},
         {"largest", largest ? nlohmann::json{{"name", largest->name},
                                              {"bytes", largest->bytes}}
                             : nlohmann::json(nullptr)},
         {"fits", fit_list}});
    return tools::kOk;
  }
  std::cout << fmt::format("{}: {} tensors, {}\n", listing.describe(),
                           listing.tensors().size(),
                           mold::format_bytes(listing.bytes()));
  for (std::size_t i = 0; i < listing.gguf_architectures().size(); ++i)
    std::cout << fmt::format(
        "  GGUF general.architecture: {}\n",
        listing.gguf_architectures()[i].empty()
            ? std::string("(none)")
            : mold::escape_control(listing.gguf_architectures()[i]));
  for (const auto& [type, total] : types)
    std::cout << fmt::format("  {:<8} {:>6} tensors {:>12}\n",
                             mold::escape_control(type), total.tensors,
                             mold::format_bytes(total.bytes));
  if (companions)
    std::cout << fmt::format(
        "  fp8: {} weight{} times a scale; {} tensor{} beside the weights "
        "(scales, input scales, markers) not listed above\n",
        scaled, scaled == 1 ? "" : "s", companions, companions == 1 ? "" : "s");
  if (largest)
    std::cout << fmt::format("  largest: {} ({})\n",
                             mold::escape_control(largest->name),
                             mold::format_bytes(largest->bytes));
  if (found.empty())
    std::cout << "fits no layout of the loaded families (see docs/models.md)\n";
  for (const auto& f : found) {
    if (!f.problem.empty()) {
      std::cout << fmt::format("{} {}: does not fit: {}\n", f.family,
                               f.component, f.problem);
      continue;
    }
    std::cout << fmt::format("{} {}: {} layout ({}): {} parameters", f.family,
                             f.component, f.layout, f.description,
                             f.parameters);
    if (f.dropped)
      std::cout << fmt::format(", {} tensor{} dropped", f.dropped,
                               f.dropped == 1 ? "" : "s");
    for (const auto& [key, value] : f.implies)
      std::cout << fmt::format(", implies {} = {}", key, value);
    std::cout << "\n";
    if (!f.missing_hint.empty())
      std::cout << fmt::format("  missing: {}\n", f.missing_hint);
  }
  return tools::kOk;
}

}  // namespace molddiag
