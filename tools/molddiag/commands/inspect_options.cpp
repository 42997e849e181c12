#include "inspect_options.hpp"

#include <fmt/format.h>

#include <mold/base/text.hpp>
#include <mold/estimate/arch_names.hpp>

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

tools::Parsed<InspectRequest> parse_inspect_options(
    const std::vector<std::string>& args) {
  tools::Parsed<InspectRequest> parsed;
  InspectRequest& r = parsed.request;
  po::options_description options(
      "molddiag inspect FILE [FILE ...] [options]\n\n"
      "What a checkpoint holds, read from its header alone (a .safetensors "
      "file,\n"
      "a .gguf, a folder of shards; several files are one checkpoint, as a "
      "text GGUF\n"
      "and its mmproj): its tensors by type and bytes, which family's "
      "component it\n"
      "fits, in which layout (docs/models.md), what mold converts on load, "
      "and,\n"
      "against that component at --arch, the tensors missing, mis-shaped, of "
      "a type\n"
      "mold does not read, or unexpected.\n"
      "Exit: 0 read, and some component loads it; 1 a file that is not a "
      "checkpoint;\n"
      "2 usage error; 7 read, but no component would load it (the report "
      "says why).\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "file", po::value(&r.files)->composing()->required(),
      "the checkpoint's file(s)")(
      "arch", po::value(&r.arch)->default_value(mold::archs::kDefault),
      "the architecture to check the tensors against: default (the published "
      "one, which mold run reads a component file as) or tiny")(
      "json", po::bool_switch(&r.json),
      "print JSON (fields in docs/molddiag.md)");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("file", -1);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options, &positional);
  if (r.arch != mold::archs::kDefault && r.arch != mold::archs::kTiny)
    throw tools::UsageError(fmt::format("--arch '{}': give default or tiny",
                                        mold::escape_control(r.arch)));
  return parsed;
}

}  // namespace molddiag
