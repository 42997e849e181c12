// mold run here (run_options.hpp reads the command line): every phase
// through the model cache with its estimate; progress lines on stderr, the
// images as PNGs whose text chunks say how each was made.

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/catalog/model_dir.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/device/backend.hpp>
#include <mold/net/server_address.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/event_json.hpp>
#include <mold/runtime/json_recorder.hpp>
#include <mold/runtime/progress_printer.hpp>
#include <mold/runtime/runner.hpp>
#include <mold/tensor/compute_threads.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/family_lookup.hpp"
#include "common/host.hpp"
#include "common/image_input.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"
#include "generation/image_output.hpp"
#include "generation/run_plan.hpp"
#include "output_path.hpp"
#include "run_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;
namespace fs = std::filesystem;

namespace mold_cli {

namespace {

void print_plan(std::ostream& out, const std::vector<PlanStep>& steps,
                const mold::Backend& backend, mold::Bytes available) {
  out << fmt::format("plan for one image on {} ({}): {} available\n",
                     backend.name(), backend.device_name(),
                     mold::format_bytes(available));
  for (const auto& s : steps) {
    out << fmt::format(
        "  {:<12} {:<13} estimate {:>10}  weights to load {:>10}  free "
        "{:>10}",
        s.phase.phase, s.phase.component, mold::format_bytes(s.estimate.bytes),
        mold::format_bytes(s.component_bytes),
        mold::format_bytes(s.free_before));
    if (!s.parked.empty()) {
      std::string parked;
      for (const auto& p : s.parked) parked += (parked.empty() ? "" : ", ") + p;
      out << "  parks " << parked;
    }
    std::string resident;
    for (const auto& p : s.resident)
      resident += (resident.empty() ? "" : ", ") + p;
    out << "  resident: " << (resident.empty() ? "none" : resident);
    if (!s.note.empty()) out << "  (" << s.note << ")";
    if (!s.fits) out << "  DOES NOT FIT: " << s.problem;
    out << "\n";
    if (!s.estimate.source.empty())
      out << fmt::format("  {:<12} ({})\n", "", s.estimate.source);
  }
}

void print_sources(std::ostream& out,
                   const std::vector<mold::ComponentSource>& sources) {
  for (const auto& s : sources) {
    std::string files;
    for (const auto& f : s.files) files += (files.empty() ? "" : " + ") + f;
    out << fmt::format(
        "  {:<13} {:>10}  {}\n", s.component, mold::format_bytes(s.bytes),
        files.empty() ? s.description
                      : fmt::format("{} ({} layout)", files, s.layout));
  }
}

nlohmann::json sources_json(const std::vector<mold::ComponentSource>& sources) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : sources)
    out.push_back({{"component", s.component},
                   {"files", s.files},
                   {"layout", s.layout.empty() ? nlohmann::json(nullptr)
                                               : nlohmann::json(s.layout)},
                   {"description", s.description},
                   {"bytes", s.bytes}});
  return out;
}

nlohmann::json plan_json(const std::vector<PlanStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : steps)
    out.push_back({{"phase", s.phase.phase},
                   {"component", s.phase.component},
                   {"workload", mold::workload_object(s.phase.workload)},
                   {"estimate_bytes", s.estimate.bytes},
                   {"estimate_source", s.estimate.source},
                   {"estimate_origin", s.estimate.origin},
                   {"weights_to_load_bytes", s.component_bytes},
                   {"free_bytes", s.free_before},
                   {"parks", s.parked},
                   {"resident", s.resident},
                   {"fits", s.fits},
                   {"note", s.note},
                   {"problem", s.problem}});
  return out;
}

}  // namespace

int run_local(const RunRequest& request,
              const std::vector<std::string>& images_png) {
  mold::GenerateRequest generate(request.generate);
  for (std::size_t i = 0; i < images_png.size(); ++i)
    generate.images.push_back(
        tools::decode_source_image(request.image_files[i], images_png[i]));
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, "molddiag plugins");
  // Every compute pool at one count (the BLAS's would be every logical CPU).
  const mold::ThreadCounts threads =
      mold::start_compute_threads(request.threads);
  tools::PreparedRun prepared = tools::prepare_run(
      host, request.model_spec, request.tiny, request.model_dirs, request.dtype,
      request.backend, request.component_files);
  const std::shared_ptr<mold::Backend>& backend = prepared.backend;
  const tools::FailureContext& failure = prepared.failure;
  try {
    std::unique_ptr<mold::Pipeline> pipeline =
        prepared.found.family->make_pipeline(prepared.options);
    mold::ModelCache cache(backend, host.config.cache);
    mold::Runner runner(*pipeline, cache, *host.registry);
    const auto history = tools::open_history(host, *backend);
    runner.set_history(history, "mold run");
    const mold::ResolvedRequest resolved = pipeline->resolve_request(generate);

    if (request.plan) {
      const auto steps = simulate_plan(
          runner.plan(resolved), pipeline->components(), cache.available(),
          host.config.cache.working_memory_floor, [&](const mold::Workload& w) {
            mold::RunContext context(cache, *host.registry, {});
            context.set_history(history, "mold run");
            return context.estimate(w);
          });
      if (request.json) {
        const nlohmann::json plan = {
            {"model", pipeline->model()},
            {"variant", pipeline->variant()},
            {"backend", backend->name()},
            {"available_bytes", cache.available()},
            {"components", sources_json(pipeline->component_sources())},
            {"phases", plan_json(steps)}};
        tools::print_json(std::cout, plan);
      } else {
        print_plan(std::cout, steps, *backend, cache.available());
        std::cout << "components:\n";
        print_sources(std::cout, pipeline->component_sources());
      }
      return tools::kOk;
    }

    mold::ProgressPrinter progress(std::cerr);
    mold::JsonRecorder recorder;
    runner.add_observer(&progress);
    if (request.json) runner.add_observer(&recorder);
    std::cerr << fmt::format("mold run: {}\n", mold::describe(threads));
    if (pipeline->seeded_weights())
      std::cerr << fmt::format("mold run: {} with {}\n", pipeline->model(),
                               pipeline->describe_weights());
    runner.run(resolved, [&](mold::ImageRecord& record,
                             const mold::GeneratedImage& image) {
      record.path = choose_output_path(request.output, pipeline->model(),
                                       record.seed, request.save_tensors);
      const std::vector<mold::PngText> text =
          png_text(*pipeline, *resolved, record.seed);
      if (request.save_tensors) {
        std::map<std::string, std::string> metadata;
        for (const auto& t : text) metadata[t.key] = t.value;
        fs::path tensors = record.path;
        mold::save_safetensors(tensors.replace_extension(".safetensors"),
                               image.tensors, metadata);
      }
      write_image(record.path, image.rgb, text);
    });
    if (request.json) {
      recorder.set_field("model", nlohmann::json(pipeline->model()).dump());
      recorder.set_field("variant", nlohmann::json(pipeline->variant()).dump());
      recorder.set_field("seeded_weights",
                         pipeline->seeded_weights() ? "true" : "false");
      recorder.set_field("weights",
                         nlohmann::json(pipeline->describe_weights()).dump());
      recorder.set_field("backend", nlohmann::json(backend->name()).dump());
      recorder.set_field("threads",
                         nlohmann::json{{"compute", threads.intra_op},
                                        {"blas", threads.blas},
                                        {"inter_op", threads.inter_op},
                                        {"source", threads.source}}
                             .dump());
      recorder.set_field("components",
                         sources_json(pipeline->component_sources()).dump());
      std::cout << recorder.dump() << "\n";
    }
    return tools::kOk;
  } catch (const mold::InvalidArgument&) {
    throw;
  } catch (...) {
    tools::rethrow_readable(failure);
  }
}

}  // namespace mold_cli
