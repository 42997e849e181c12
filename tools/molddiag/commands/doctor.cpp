// molddiag doctor: the machine mold computes on, as libtorch sees it: its
// version and threads, which BLAS its float32 matrix products call, and how
// fast a matrix product runs in float32 and bfloat16. Warns about what slows
// every run down (the reference BLAS).

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/device/blas_library.hpp>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <mold/plugin/plugin.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/compute_threads.hpp>
#include <mold/tensor/gemm_rate.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "doctor_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct GemmResult {
  std::string dtype;
  mold::GemmRate rate;
};

/// A backend the plugins registered, created to see its device: its memory,
/// or why it is unavailable here.
struct BackendStatus {
  std::string name;
  std::string device;
  mold::Bytes total = 0;
  mold::Bytes free = 0;
  std::string unavailable;  ///< the error creating it gave; empty when usable
};

struct DoctorResult {
  std::vector<BackendStatus> backends;
  mold::BlasLibrary blas;
  int torch_threads = 0;
  std::string threads_source;  ///< where torch_threads came from
  unsigned cores = 0;
  bool onednn = false;
  mold::CpuMatmulKernel matmul_kernel = mold::CpuMatmulKernel::other;
  std::vector<GemmResult> gemm;
  std::vector<std::string> warnings;
};

std::vector<BackendStatus> backend_statuses(const mold::Registry& registry) {
  std::vector<BackendStatus> out;
  for (const std::string& name : registry.backend_names()) {
    BackendStatus status;
    status.name = name;
    try {
      const auto backend = registry.create_backend(name);
      status.device = backend->device_name();
      const mold::MemoryStats stats = backend->stats();
      status.total = stats.total;
      status.free = stats.free;
    } catch (const std::exception& e) {
      status.unavailable = e.what();
    }
    out.push_back(std::move(status));
  }
  return out;
}

DoctorResult run(const DoctorRequest& request) {
  DoctorResult result;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  result.backends = backend_statuses(*host.registry);
  result.blas = mold::loaded_blas_library();
  // What mold run starts with here (molddiag's own commands too).
  const mold::ThreadCounts threads = mold::start_compute_threads(0);
  result.torch_threads = threads.intra_op;
  result.threads_source = threads.source;
  result.cores = std::thread::hardware_concurrency();
  result.onednn = at::hasMKLDNN();
  result.matmul_kernel = mold::host_cpu_matmul_kernel();
  if (request.gemm)
    for (const auto& [name, dtype] :
         {std::pair{"float32", at::kFloat}, {"bfloat16", at::kBFloat16}})
      result.gemm.push_back(
          {name, mold::measure_gemm(
                     {request.gemm_rows, request.gemm_in, request.gemm_out},
                     dtype, 0.3)});
  if (const std::string advice = mold::blas_advice(result.blas);
      !advice.empty())
    result.warnings.push_back(advice);
  const auto cpu = mold::host_cpu_features();
  if (const std::string advice =
          mold::openblas_core_advice(result.blas, cpu.avx512_core, cpu.avx2);
      !advice.empty())
    result.warnings.push_back(advice);
  if (result.blas.kind == mold::BlasLibrary::Kind::none)
    result.warnings.push_back(
        "no BLAS library is loaded in this process (no object defines "
        "sgemm_): libtorch was built without one, or links it statically");
  return result;
}

nlohmann::json to_json(const DoctorRequest& request,
                       const DoctorResult& result) {
  nlohmann::json out;
  out["mold"] = {{"version", MOLD_VERSION},
                 {"build_id", mold::core_build_id()}};
  out["libtorch"] = {
      {"version", MOLD_TORCH_VERSION},
      {"threads", result.torch_threads},
      {"threads_source", result.threads_source},
      {"onednn", result.onednn},
      {"bfloat16_kernel", mold::to_string(result.matmul_kernel)}};
  out["cores"] = result.cores;
  out["backends"] = nlohmann::json::array();
  for (const auto& b : result.backends) {
    nlohmann::json item = {{"name", b.name}};
    if (b.unavailable.empty()) {
      item["device"] = b.device;
      item["total"] = b.total;
      item["free"] = b.free;
    } else {
      item["unavailable"] = b.unavailable;
    }
    out["backends"].push_back(std::move(item));
  }
  out["blas"] = {{"kind", std::string(mold::to_string(result.blas.kind))},
                 {"path", result.blas.path},
                 {"version", result.blas.version},
                 {"threads", result.blas.threads},
                 {"slow", result.blas.slow()}};
  out["gemm"] = nlohmann::json::array();
  for (const auto& g : result.gemm)
    out["gemm"].push_back({{"dtype", g.dtype},
                           {"rows", request.gemm_rows},
                           {"in", request.gemm_in},
                           {"out", request.gemm_out},
                           {"gflops", g.rate.gflops},
                           {"seconds", g.rate.seconds},
                           {"repeats", g.rate.repeats}});
  out["warnings"] = result.warnings;
  return out;
}

void print_text(const DoctorRequest& request, const DoctorResult& result) {
  std::cout << fmt::format("mold {} ({})\n", MOLD_VERSION,
                           mold::core_build_id());
  // libtorch's own default is the physical cores, which a VM may report as
  // fewer than its logical CPUs: mold starts with the CPUs it may run on.
  std::cout << fmt::format(
      "libtorch {}: {} compute thread{} of {} logical CPUs, from {} (mold run "
      "--threads or OMP_NUM_THREADS sets it), oneDNN {}\nbfloat16 products: "
      "{} (their scratch per thread: docs/architecture.md, \"Threads\")\n",
      MOLD_TORCH_VERSION, result.torch_threads,
      result.torch_threads == 1 ? "" : "s", result.cores, result.threads_source,
      result.onednn ? "yes" : "no", mold::to_string(result.matmul_kernel));
  std::cout << "backends:\n";
  for (const auto& b : result.backends)
    std::cout << (b.unavailable.empty()
                      ? fmt::format("  {:<6} {}: {} free of {}\n",
                                    mold::escape_control(b.name),
                                    mold::escape_control(b.device),
                                    mold::format_bytes(b.free),
                                    mold::format_bytes(b.total))
                      : fmt::format("  {:<6} unavailable: {}\n",
                                    mold::escape_control(b.name),
                                    mold::escape_control(b.unavailable)));
  const mold::BlasLibrary& blas = result.blas;
  if (blas.kind == mold::BlasLibrary::Kind::none) {
    std::cout << "BLAS: none loaded\n";
  } else {
    std::cout << fmt::format("BLAS: {}{}\n  {}\n", mold::to_string(blas.kind),
                             blas.threads
                                 ? fmt::format(", {} threads", blas.threads)
                                 : std::string(),
                             blas.path);
    if (!blas.version.empty()) std::cout << "  " << blas.version << "\n";
  }
  if (!result.gemm.empty()) {
    std::cout << fmt::format("matrix product [{} x {}] by [{} x {}]:\n",
                             request.gemm_rows, request.gemm_in,
                             request.gemm_in, request.gemm_out);
    for (const auto& g : result.gemm)
      std::cout << fmt::format("  {:<9} {:8.1f} GFLOP/s ({:.2f} ms, {} runs)\n",
                               g.dtype, g.rate.gflops, g.rate.seconds * 1e3,
                               g.rate.repeats);
  }
  for (const auto& w : result.warnings) std::cout << "\nwarning: " << w << "\n";
}

}  // namespace

int doctor_command(const std::vector<std::string>& args) {
  const auto parsed = parse_doctor_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const DoctorRequest& request = parsed.request;
  const DoctorResult result = run(request);
  if (request.json)
    tools::print_json(std::cout, to_json(request, result));
  else
    print_text(request, result);
  return request.strict && !result.warnings.empty() ? tools::kWarnings
                                                    : tools::kOk;
}

}  // namespace molddiag
