// molddiag inspect: what a checkpoint file holds, without reading a tensor:
// its tensors by type and bytes, and for every family's component whose
// layout it matches, the layout, what mold would convert, and, against that
// component declared at --arch (shapes only, no memory), every tensor missing,
// mis-shaped, of a type mold does not read, or unexpected.

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/components.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/catalog/weight_layout.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/module.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/vae.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/ggml_quant.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "inspect_options.hpp"

namespace tools = mold::tools;

namespace molddiag {

namespace {

/// Names listed in the text report per kind of problem (JSON: kJsonNames).
constexpr std::size_t kTextNames = 5;
constexpr std::size_t kJsonNames = 100;

struct TypeTotal {
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;
};

struct Fit {
  std::string family, component, layout, description, problem;
  std::size_t parameters = 0, dropped = 0;
  std::vector<std::pair<std::string, std::string>> implies;
  std::string missing_hint;
  /// Against the component at the request's arch (when it could be built).
  std::optional<mold::LoadComparison> check;
  std::string model;  ///< "the zimage transformer (default)"
};

std::unique_ptr<mold::Module> declare_component(const mold::ModelFamily& family,
                                                const std::string& component,
                                                const std::string& arch) {
  const mold::ArchSpec spec = mold::ArchSpec::parse(arch);
  if (component == mold::components::kTransformer)
    return family.make_transformer(spec);
  if (component == mold::components::kTextEncoder)
    return family.make_text_encoder(spec);
  return family.make_vae(arch, 0);  // seeded: the factory takes a seed
}

std::vector<Fit> fits(const mold::Registry& registry,
                      const mold::TensorListing& listing,
                      const std::string& arch) {
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
        const auto module = declare_component(*family, component, arch);
        fit.model = module->describe();
        fit.check = module->compare(listing, *mapping);
      } catch (const mold::Error& e) {
        fit.problem = e.what();
      }
      out.push_back(std::move(fit));
    }
  return out;
}

nlohmann::json first_names(const std::vector<std::string>& names) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < names.size() && i < kJsonNames; ++i)
    list.push_back(names[i]);
  return list;
}

nlohmann::json check_json(const mold::LoadComparison& c) {
  nlohmann::json misshaped = nlohmann::json::array();
  for (std::size_t i = 0; i < c.misshaped.size() && i < kJsonNames; ++i)
    misshaped.push_back({{"parameter", c.misshaped[i].parameter},
                         {"tensor", c.misshaped[i].source},
                         {"shape", c.misshaped[i].shape},
                         {"expected", c.misshaped[i].expected}});
  nlohmann::json unreadable = nlohmann::json::array();
  for (std::size_t i = 0; i < c.unreadable.size() && i < kJsonNames; ++i)
    unreadable.push_back(
        {{"tensor", c.unreadable[i].first},
         {"type", mold::ggml_type_name(c.unreadable[i].second)}});
  return {{"loads", c.loads()},
          {"missing_count", c.missing.size()},
          {"missing", first_names(c.missing)},
          {"misshaped_count", c.misshaped.size()},
          {"misshaped", misshaped},
          {"unreadable_count", c.unreadable.size()},
          {"unreadable", unreadable},
          {"unexpected_count", c.unexpected.size()},
          {"unexpected", first_names(c.unexpected)}};
}

/// "3 missing: 'a', 'b', 'c'" lines of one kind, the first kTextNames.
template <class Item, class Show>
void print_kind(const std::vector<Item>& items, const char* kind, Show show) {
  if (items.empty()) return;
  std::cout << fmt::format("  {} {}:", items.size(), kind);
  for (std::size_t i = 0; i < items.size() && i < kTextNames; ++i)
    std::cout << (i ? ", " : " ") << show(items[i]);
  if (items.size() > kTextNames)
    std::cout << fmt::format(", and {} more", items.size() - kTextNames);
  std::cout << "\n";
}

void print_check(const Fit& f, const std::string& arch) {
  const mold::LoadComparison& c = *f.check;
  if (c.loads() && c.unexpected.empty()) {
    std::cout << fmt::format(
        "  loads: every tensor of {} is there, in its "
        "shape\n",
        f.model);
    return;
  }
  std::cout << fmt::format(
      "  {} {}:\n", c.loads() ? "loads (with warnings) as" : "does not load as",
      f.model);
  auto quoted = [](const std::string& name) {
    return "'" + mold::escape_control(name) + "'";
  };
  print_kind(c.missing, "missing", quoted);
  print_kind(c.misshaped, "mis-shaped", [&](const auto& m) {
    return fmt::format("{} is {}, expected {}", quoted(m.source),
                       mold::list_text(m.shape), mold::list_text(m.expected));
  });
  print_kind(c.unreadable, "of a type mold does not read", [&](const auto& u) {
    return fmt::format("{} ({})", quoted(u.first),
                       mold::ggml_type_name(u.second));
  });
  print_kind(c.unexpected, "unexpected (ignored on load)", quoted);
  if (!c.misshaped.empty() && arch == mold::archs::kDefault)
    std::cout << "  (checked against the published architecture: a smaller "
                 "file may be a tiny one, --arch tiny)\n";
}

}  // namespace

int inspect_command(const std::vector<std::string>& args) {
  const auto parsed = parse_inspect_options(args);
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
  const std::vector<Fit> found = fits(*host.registry, listing, request.arch);
  bool loads = false;
  for (const auto& f : found) loads = loads || (f.check && f.check->loads());
  const int exit_code = loads ? tools::kOk : tools::kDoesNotLoad;
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
           {"missing_hint", f.missing_hint},
           {"model", f.model},
           {"check", f.check ? check_json(*f.check) : nlohmann::json(nullptr)},
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
         {"arch", request.arch},
         {"loads", loads},
         {"fits", fit_list}});
    return exit_code;
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
    if (f.check) print_check(f, request.arch);
    if (!f.missing_hint.empty() && f.check && !f.check->missing.empty())
      std::cout << fmt::format("  {}\n", f.missing_hint);
  }
  return exit_code;
}

}  // namespace molddiag
