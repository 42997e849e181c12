// mold_test_plugin_probe: loads the real plugins as the tools do, then says
// after each step whether libtorch is loaded in this process, one line each:
//   loaded: libtorch no
//   estimated: libtorch no
//   resolved: libtorch yes     (with --build: the zimage family's VAE factory)
// For tests/plugins/companion_test.cpp: a family plugin links no libtorch;
// its companion, loaded by the first factory call, does.

#include <link.h>

#include <cstring>
#include <iostream>
#include <mold/catalog/model_family.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <string>

#include "support/paths.hpp"

namespace {

bool libtorch_loaded() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name && std::strstr(info->dlpi_name, "libtorch_cpu"))
          *static_cast<bool*>(data) = true;
        return 0;
      },
      &found);
  return found;
}

void report(const char* step) {
  std::cout << step << ": libtorch " << (libtorch_loaded() ? "yes" : "no")
            << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  const bool build = argc > 1 && std::string(argv[1]) == "--build";
  mold::Registry registry;
  mold::PluginLoader(registry).load_directories({mold::test::kPluginDir});
  if (!registry.load_errors().empty()) {
    std::cerr << registry.load_errors().front().message << "\n";
    return 1;
  }
  report("loaded");

  mold::Workload workload;
  workload.family = "zimage";
  workload.model = "z-image-turbo";
  workload.op = mold::ops::kDenoise;
  workload.backend = "cpu";
  workload.dtype = "bfloat16";
  workload.height = workload.width = 256;
  workload.tokens = 16;
  std::cout << "estimate: " << registry.estimate(workload).bytes << " bytes\n";
  report("estimated");

  if (build) {
    // Resolving the factory loads the companion; building a VAE would need
    // its type, which is libtorch's side.
    const auto& make_vae = registry.family("zimage")->make_vae.function();
    report(make_vae ? "resolved" : "not resolved");
  }
  return 0;
}
