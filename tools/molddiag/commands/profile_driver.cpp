#include "profile_driver.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <mold/cache/cache.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/profile/profile_recorder.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/runner.hpp>

#include "common/family_lookup.hpp"
#include "common/image_input.hpp"
#include "common/readable_error.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

mold::MemoryProfile run_profile(const ProfileRun& r) {
  const tools::Host host = tools::open_host(r.host);
  tools::warn_load_errors(*host.registry, "molddiag plugins");
  tools::PreparedRun prepared = tools::prepare_run(
      host, r.model_spec, r.tiny, r.model_dirs, r.dtype, r.backend);
  const std::shared_ptr<mold::Backend>& backend = prepared.backend;
  tools::FailureContext& failure = prepared.failure;
  failure.verbose = r.verbose;
  try {
    std::unique_ptr<mold::Pipeline> pipeline =
        prepared.found.family->make_pipeline(prepared.options);
    mold::ModelCache cache(backend, host.config.cache);
    mold::Runner runner(*pipeline, cache, *host.registry);
    // Recorded, not learned: every image runs with the same estimates, so
    // that images compare.
    runner.set_history(tools::open_history(host, *backend), "molddiag", false);
    mold::MemoryProfile header;
    header.driver = "local";
    header.subject =
        fmt::format("{}:{}, {}", pipeline->model(), pipeline->variant(),
                    pipeline->describe_weights());
    header.backend = backend->name();
    header.device = backend->device_name();
    mold::ProfileRecorder recorder(header);
    const int images = r.images;
    if (!r.quiet) {
      std::cerr << fmt::format("molddiag: {} images of {} on {} ({})\n", images,
                               header.subject, header.backend, header.device);
      recorder.set_on_image(
          [images, last = mold::Bytes(0)](const mold::ImageSample& s) mutable {
            const mold::Bytes now = s.after.allocated;
            const std::string delta =
                s.image == 0 ? std::string()
                : now >= last
                    ? fmt::format(" (+{})", mold::format_bytes(now - last))
                    : fmt::format(" (-{})", mold::format_bytes(last - now));
            last = now;
            std::cerr << fmt::format(
                "[{}/{}] allocated {}{}, reserved {}, host RSS {}, {:.1f} s\n",
                s.image + 1, images, mold::format_bytes(now), delta,
                mold::format_bytes(s.after.reserved),
                mold::format_bytes(s.after.host_rss), s.seconds);
          });
    }
    runner.add_observer(&recorder);
    mold::GenerateRequest request;
    static_cast<mold::GenerateSettings&>(request) = r.generate;
    request.batch = images;
    for (const std::string& file : r.source_images)
      request.images.push_back(tools::decode_source_image(
          file, tools::read_image_file(file, "--image")));
    runner.run(pipeline->resolve_request(request), {});
    return recorder.profile();
  } catch (const mold::InvalidArgument&) {
    throw;
  } catch (...) {
    tools::rethrow_readable(failure);
  }
}

}  // namespace molddiag
