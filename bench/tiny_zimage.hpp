#pragma once
// The tiny Z-Image with seeded weights on the cpu backend, ready to run
// (registry, pipeline, model cache, runner), for the benchmarks that time
// the runtime. Throws std::runtime_error when the zimage plugin is missing.

#include <memory>
#include <mold/cache/cache.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/runner.hpp>
#include <stdexcept>
#include <string>

namespace mold_bench {

struct TinyZImage {
  mold::Registry registry;
  std::unique_ptr<mold::Pipeline> pipeline;
  std::unique_ptr<mold::ModelCache> cache;
  std::unique_ptr<mold::Runner> runner;

  explicit TinyZImage(const std::string& plugin_dir) {
    mold::PluginLoader(registry).load_directory(plugin_dir);
    const mold::ModelFamily* family = registry.family("zimage");
    if (!family || !family->make_pipeline)
      throw std::runtime_error("no zimage plugin in " + plugin_dir);
    mold::PipelineOptions options;
    options.model = "z-image-turbo";
    options.variant = "bf16";
    options.arch = mold::ArchSpec::parse("tiny");
    options.dtype = "float32";
    options.backend = "cpu";
    pipeline = family->make_pipeline(options);
    cache = std::make_unique<mold::ModelCache>(registry.create_backend("cpu"));
    runner = std::make_unique<mold::Runner>(*pipeline, *cache, registry);
  }
};

}  // namespace mold_bench
