#include "plugin/core_plugin.hpp"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "mold/device/cpu_backend.hpp"
#include "oom/core_classifiers.hpp"

namespace mold {

namespace {

/// The cpu backend's own advice: a limit the user set is what ran out.
std::vector<std::string> cpu_hints(const OomReport& report,
                                   const Workload* /*workload*/) {
  if (!report.limit) return {};
  return {fmt::format(
      "the cpu backend's memory limit is {}: raise --cpu-memory-limit or "
      "[backends.cpu] memory_limit if the machine has more",
      format_bytes(*report.limit))};
}

}  // namespace

void register_core_plugin(Registrar& registrar) {
  registrar.add_backend(
      "cpu", [] { return std::shared_ptr<Backend>(CpuBackend::instance()); });
  registrar.add_hint_provider("cpu", cpu_hints);
  registrar.add_classifier("cpu", classify_cpu_oom, kSpecificClassifier);
  registrar.add_classifier("xpu", classify_xpu_oom, kSpecificClassifier);
  registrar.add_classifier("generic", classify_generic_oom,
                           kFallbackClassifier);
}

}  // namespace mold
