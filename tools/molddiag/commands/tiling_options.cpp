// molddiag tiling's options (tiling_options.hpp).

#include "tiling_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/base/error.hpp>

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

tools::Parsed<TilingRequest> parse_tiling_options(
    const std::vector<std::string>& args) {
  tools::Parsed<TilingRequest> parsed;
  TilingRequest& r = parsed.request;
  std::string workspace = "64 MiB", mkldnn = "on";
  int overlap = -1;
  po::options_description options(
      "molddiag tiling --family F [--size N] [--tile T] [--json]\n\n"
      "Decodes one seeded latent of an N x N image whole, with bounded "
      "convolutions, and\n"
      "in tiles blended linearly and with smootherstep; prints each run's peak "
      "bytes\n"
      "(measured by the cpu backend's allocator), time, and relative L2 and "
      "max |d| against\n"
      "the whole decode: over the image, per quadrant, and in the seam bands "
      "(pixels two\n"
      "tiles cover). Exit: 0 done; 1 failed (out of memory: the label and "
      "hints); 2 usage.\n\n"
      "options");
  options.add_options()("help,h", "this help")("family", po::value(&r.family),
                                               "qwen_image or zimage");
  tools::add_ranged_int(options, "size", &r.size, 8, 8192,
                        "image edge in pixels (multiple of 8)", 256);
  tools::add_ranged_int(options, "tile", &r.tile, 0, 1024,
                        "tile edge in latent units (0: half the latent)", 0);
  tools::add_ranged_int(options, "overlap", &overlap, -1, 1023,
                        "overlap in latent units (-1: tile/4)", -1);
  options.add_options()("arch", po::value(&r.arch)->default_value("default"),
                        "default or tiny architecture");
  tools::add_seed_option(options, "seed", &r.seed, "weights and latent seed");
  options.add_options()("workspace",
                        po::value(&workspace)->default_value("64 MiB"),
                        "bound for the bounded run")(
      "mkldnn", po::value(&mkldnn)->default_value("on"),
      "on: oneDNN convolutions; off: libtorch's im2col path")(
      "verbose", po::bool_switch(&r.verbose),
      "on a libtorch error, print its full text, C++ backtrace included")(
      "json", po::bool_switch(&r.json), "print JSON");
  tools::add_host_options(options, r.host);
  const auto vm = tools::parse_args(args, options);
  if (vm.count("help")) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  if (r.family.empty()) throw tools::UsageError("--family is required");
  if (r.size <= 0 || r.size % 8)
    throw tools::UsageError(
        fmt::format("--size {} must be a positive multiple of 8", r.size));
  if (mkldnn != "on" && mkldnn != "off")
    throw tools::UsageError("--mkldnn takes on or off");
  r.mkldnn = mkldnn == "on";
  const int latent = r.size / 8;
  const bool tile_given = r.tile != 0;
  if (!tile_given) r.tile = std::max(1, latent / 2);
  r.overlap = overlap < 0 ? r.tile / 4 : overlap;
  if (r.tile <= r.overlap)
    throw tools::UsageError(
        tile_given ? fmt::format("--tile {} must be larger than --overlap {}",
                                 r.tile, r.overlap)
                   : fmt::format("--overlap {} must be smaller than the tile, "
                                 "which is {} (half the {}-latent edge of "
                                 "--size {}) when --tile is not given",
                                 r.overlap, r.tile, latent, r.size));
  try {
    r.workspace_bound = mold::parse_bytes(workspace);
  } catch (const mold::ParseError& e) {
    throw tools::UsageError(e.what());
  }
  return parsed;
}

}  // namespace molddiag
