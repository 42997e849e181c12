#include "mold/estimate/sequence_model.hpp"

#include <fmt/format.h>

namespace mold {

Estimate SequenceModel::estimate(const Workload& workload,
                                 const SequenceShape& shape) const {
  workload.validate();
  const double batch = double(workload.batch);
  const std::string what = "the estimate of " + workload.describe();
  Estimate e;
  const double token_basis = shape.tokens * shape.width * shape.element * batch;
  e.terms.emplace_back(
      "activations", bytes_from_double(bytes_per_token * token_basis, what),
      fmt::format("{:g} B/token/width-elem-byte x {} x {:g} wide x {:g} B x "
                  "batch {}",
                  bytes_per_token, shape.tokens_detail, shape.width,
                  shape.element, workload.batch),
      "bytes_per_token", token_basis);
  const double score_basis = shape.scores * shape.score_element * batch;
  e.terms.emplace_back(
      "attention", bytes_from_double(bytes_per_score * score_basis, what),
      fmt::format("{:g} B/score/elem-byte x {} x {:g} B x batch {}",
                  bytes_per_score, shape.scores_detail, shape.score_element,
                  workload.batch),
      "bytes_per_score", score_basis);
  e.terms.emplace_back(
      "fixed", bytes_from_double(fixed_bytes * batch, what),
      fmt::format("{:g} B x batch {}", fixed_bytes, workload.batch),
      "fixed_bytes", batch);
  double total = 0;
  for (const auto& t : e.terms) total += double(t.bytes);
  e.terms.emplace_back("headroom",
                       bytes_from_double(total * (headroom - 1), what),
                       fmt::format("x{:g} of the terms above", headroom));
  for (const auto& t : e.terms) e.bytes += t.bytes;

  const bool same_backend = workload.backend == backend;
  const bool same_arch = arch.empty() || workload.arch == arch;
  e.calibrated = calibrated && same_backend && same_arch;
  e.source = fmt::format("{} [{}.{}]{}{}", file.filename().string(), op,
                         backend, source.empty() ? "" : ": ", source);
  if (!same_arch)
    e.source += fmt::format(
        " (measured on the {} architecture; applied to {} through its sizes, "
        "not measured there)",
        arch, workload.arch.empty() ? std::string("this one") : workload.arch);
  if (!same_backend)
    e.source += fmt::format(" (the {} constants: not measured on {})", backend,
                            workload.backend);
  if (!overridden_by.empty())
    e.source += fmt::format(" (keys set by {})", overridden_by.string());
  return e;
}

}  // namespace mold
