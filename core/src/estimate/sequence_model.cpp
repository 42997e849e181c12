#include "mold/estimate/sequence_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "mold/base/error.hpp"
#include "mold/device/cpu_quantized_product.hpp"

namespace mold {

namespace {

std::string table_name(const SequenceModel& m) {
  return fmt::format("[{}.{}] of {}", m.op, m.backend, m.file.string());
}

// `threads` threads' matrix-product scratch, `scratch` bytes each: the
// threads past the first where the constants were measured at one, whose
// scratch they hold (`past_first`), every thread where the count is of the
// tensors alone; a term only where there are any and the peak has scratch.
void add_threads_term(Estimate& e, int threads, bool past_first, double scratch,
                      const std::string& detail, const std::string& what) {
  if (threads <= 0 || scratch <= 0) return;
  e.terms.emplace_back(
      "threads", bytes_from_double(double(threads) * scratch, what),
      fmt::format("{} thread{}{} x {:g} B of matrix-product scratch{}", threads,
                  threads == 1 ? "" : "s", past_first ? " past the first" : "",
                  scratch,
                  detail.empty() ? std::string() : " (" + detail + ")"));
  e.terms.back().counted = true;
}

// A quantized model's dequantization buffer; a term only where there is one.
void add_weights_term(Estimate& e, const SequenceShape& shape,
                      const std::string& what) {
  if (shape.weight_scratch <= 0) return;
  e.terms.emplace_back(
      "dequantized_weights", bytes_from_double(shape.weight_scratch, what),
      fmt::format("the largest matrix dequantized as its layer runs: {}",
                  shape.weight_scratch_detail));
  e.terms.back().counted = true;
}

}  // namespace

void SequenceShape::add_stage(const std::string& name, double bytes,
                              const std::string& how) {
  stages.push_back(
      {name, bytes, format_bytes(bytes_from_double(bytes, name)) + ": " + how});
}

void SequenceShape::count_weight_scratch(
    const Workload& workload, const std::vector<MatrixUse>& matrices) {
  weight_scratch = 0;
  weight_scratch_detail.clear();
  if (!workload.quantized) return;
  const double element = double(dtype_size(workload.dtype));
  const bool cpu = workload.backend == "cpu";
  const MatrixUse* largest = nullptr;
  for (const MatrixUse& m : matrices) {
    if (cpu && cpu_multiplies_from_blocks(std::size_t(element), m.input_rows))
      continue;
    if (!largest || m.rows * m.columns > largest->rows * largest->columns)
      largest = &m;
  }
  if (!largest) return;
  const double rows = largest->rows, columns = largest->columns;
  const double per_element = cpu ? element : 2 * 4 + 2 * element;
  weight_scratch = rows * columns * per_element;
  weight_scratch_detail = fmt::format(
      "{:g} x {:g} ({}) x {:g} B{}", rows, columns, largest->name, per_element,
      cpu ? fmt::format(" ({})", workload.dtype)
          : fmt::format(" ({} and the float32 dequantization's temporaries; "
                        "not measured on {})",
                        workload.dtype, workload.backend));
}

void SequenceShape::count_thread_scratch(
    const Workload& workload, const std::string& stage_name, double rows,
    const std::vector<MatmulShape>& products, std::optional<double> alive,
    const std::string& what) {
  const auto stage = std::find_if(
      stages.begin(), stages.end(),
      [&](const SequenceStage& s) { return s.name == stage_name; });
  if (stage == stages.end())
    throw std::logic_error("count_thread_scratch: no stage " + stage_name);
  if (workload.backend != "cpu") return;
  StageProducts group;
  group.alive = alive ? std::min(*alive, stage->bytes) : stage->bytes;
  for (const auto& product : products) {
    const double bytes =
        cpu_matmul_thread_scratch(workload.dtype, rows, product.inner,
                                  product.outer, workload.matmul_kernel);
    if (bytes > group.thread_scratch) {
      group.thread_scratch = bytes;
      group.detail = fmt::format(
          "{}{:g} rows x {:g} inner x {:g} outer, {}, {}",
          what.empty() ? "" : what + ": ", rows, product.inner, product.outer,
          workload.dtype, to_string(workload.matmul_kernel));
    }
  }
  if (group.thread_scratch <= 0) return;
  if (group.thread_scratch > thread_scratch) {
    thread_scratch = group.thread_scratch;
    thread_scratch_detail = group.detail;
  }
  stage->products.push_back(std::move(group));
}

Estimate SequenceModel::staged_estimate(const Workload& workload,
                                        const SequenceShape& shape) const {
  const std::string what = "the estimate of " + workload.describe();
  if (bytes_per_token > 0 || bytes_per_score > 0)
    throw InvalidArgument(fmt::format(
        "{} has per-token constants (bytes_per_token, bytes_per_score), but "
        "the {} plugin counts the stages of {}: give stage factors ({}) "
        "instead (molddiag calibrate --op {} writes them)",
        table_name(*this), workload.family, op,
        shape.stages.front().name + "_factor", op));
  for (const auto& entry : stage_factors) {
    const std::string& name = entry.first;
    const bool counted =
        std::any_of(shape.stages.begin(), shape.stages.end(),
                    [&](const SequenceStage& s) { return s.name == name; });
    if (!counted)
      throw InvalidArgument(fmt::format(
          "{} has {}_factor, but the {} plugin counts no stage '{}' in {}",
          table_name(*this), name, workload.family, name, op));
  }
  Estimate e;
  // Each stage peaks at the larger of its own peak and what is alive while
  // its products run plus the threads' scratch; the op at its largest stage.
  const double batch = double(workload.batch);
  const double threads = double(std::max(workload.threads, 1));
  struct Peak {
    const SequenceStage* stage = nullptr;
    const StageProducts* products = nullptr;  // where it peaks at them
    double fitted = -1;                       // factor x the count it peaks at
    double total = -1;
  } peak;
  for (const auto& stage : shape.stages) {
    const auto factor = stage_factors.find(stage.name);
    if (factor == stage_factors.end())
      throw InvalidArgument(fmt::format(
          "{} has no {}_factor: the {} plugin counts a stage '{}' in {} "
          "(measure it with molddiag calibrate --family {} --op {})",
          table_name(*this), stage.name, workload.family, stage.name, op,
          workload.family, op));
    const double own = factor->second * stage.bytes;
    const double own_total = (own + fixed_bytes * batch) * headroom;
    if (own_total > peak.total) peak = {&stage, nullptr, own, own_total};
    for (const auto& group : stage.products) {
      const double alive = factor->second * std::min(group.alive, stage.bytes);
      // The count is of the tensors: every thread's scratch comes on top.
      const double total = (alive + fixed_bytes * batch) * headroom +
                           threads * group.thread_scratch;
      if (total > peak.total) peak = {&stage, &group, alive, total};
    }
  }
  // That stage is the estimate; the others are listed at 0 bytes, with what
  // they would need.
  for (const auto& stage : shape.stages) {
    const double factor = stage_factors.at(stage.name);
    if (&stage != peak.stage) {
      e.terms.emplace_back(stage.name, Bytes(0),
                           fmt::format("below the largest stage: {:g} x {}",
                                       factor, stage.detail),
                           stage.name + "_factor", stage.bytes);
    } else if (peak.products == nullptr) {
      e.terms.emplace_back(
          stage.name, bytes_from_double(peak.fitted, what),
          fmt::format("{:g} x {} (the largest stage)", factor, stage.detail),
          stage.name + "_factor", stage.bytes);
    } else {
      const double alive = std::min(peak.products->alive, stage.bytes);
      e.terms.emplace_back(
          stage.name, bytes_from_double(peak.fitted, what),
          fmt::format("{:g} x {} alive while its matrix products run, with "
                      "the threads' scratch above its own peak of {} (the "
                      "largest stage)",
                      factor, format_bytes(bytes_from_double(alive, what)),
                      stage.detail),
          stage.name + "_factor", alive);
    }
  }
  // What no count sees (small tensors, the libraries' scratch), per batch
  // item.
  e.terms.emplace_back(
      "fixed", bytes_from_double(fixed_bytes * batch, what),
      fmt::format("{:g} B x batch {}", fixed_bytes, workload.batch),
      "fixed_bytes", batch);
  // The headroom covers the fitted part; the threads' scratch (a bound) and
  // the dequantization buffer (an exact count) are added as they are.
  e.terms.emplace_back(
      "headroom",
      bytes_from_double((peak.fitted + fixed_bytes * batch) * (headroom - 1),
                        what),
      fmt::format("x{:g} of the largest stage and the fixed bytes", headroom));
  if (peak.products != nullptr)
    add_threads_term(e, int(threads), false, peak.products->thread_scratch,
                     peak.products->detail, what);
  add_weights_term(e, shape, what);
  for (const auto& t : e.terms) e.bytes += t.bytes;
  e.calibrated = calibrated && workload.backend == backend;
  e.source = fmt::format("{} [{}.{}]{}{}", file.filename().string(), op,
                         backend, source.empty() ? "" : ": ", source);
  if (workload.backend != backend)
    e.source += fmt::format(" (the {} factors: not measured on {})", backend,
                            workload.backend);
  if (!overridden_by.empty())
    e.source += fmt::format(" (keys set by {})", overridden_by.string());
  return e;
}

Estimate SequenceModel::estimate(const Workload& workload,
                                 const SequenceShape& shape) const {
  workload.validate();
  if (!shape.stages.empty()) return staged_estimate(workload, shape);
  if (!stage_factors.empty())
    throw InvalidArgument(fmt::format(
        "{} has stage factors ({}_factor), but the {} plugin estimates {} "
        "per token: give bytes_per_token and bytes_per_score instead",
        table_name(*this), stage_factors.begin()->first, workload.family, op));
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
  double fitted = 0;
  for (const auto& t : e.terms) fitted += double(t.bytes);
  e.terms.emplace_back("headroom",
                       bytes_from_double(fitted * (headroom - 1), what),
                       fmt::format("x{:g} of the terms above", headroom));
  add_threads_term(e, workload.threads - 1, true, shape.thread_scratch,
                   shape.thread_scratch_detail, what);
  add_weights_term(e, shape, what);
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
