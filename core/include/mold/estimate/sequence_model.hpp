#pragma once
/// Working memory of a transformer's operation (text encoding, a denoiser
/// evaluation): linear in the tokens of its sequence and in the attention
/// scores alive at once. The calibration file holds the constants; the plugin
/// that knows the architecture says how many tokens, how wide and how many
/// scores a workload makes (its padding, heads, attention chunks):
///
///     [denoise.cpu]
///     bytes_per_token = 6.6   # per token per model-width element byte
///     bytes_per_score = 2.0   # per attention score per score element byte
///     fixed_bytes = 0         # per batch item
///     arch = "tiny"           # the architecture it was measured on
///     headroom = 1.05
///     calibrated = true
///     source = "molddiag calibrate --family zimage --op denoise ..."
///
/// estimate = (bytes_per_token x tokens x width x element
///             + bytes_per_score x scores x score element
///             + fixed_bytes) x batch x headroom
///             + (threads - 1) x thread scratch + weight scratch.
///
/// A plugin that counts its code's stages instead (SequenceShape::stages:
/// the bytes each stage of a layer holds at once, from the architecture's
/// widths and the dtypes it computes in) has a factor per stage in the
/// table, measured by `molddiag calibrate`; the op peaks at its largest
/// stage:
///
///     [text_encode.cpu]
///     attention_factor = 1.0      # measured / counted, attention stage
///     feed_forward_factor = 1.24  # the same for the feed-forward stage
///     fixed_bytes = 4096          # what no count sees, per batch item
///     headroom = 1.05
///
/// estimate = max over stages of the largest of
///     (factor x counted bytes + fixed_bytes x batch) x headroom and, for
///     each group of its products,
///     (factor x bytes alive beside them + fixed_bytes x batch)
///       x headroom + threads x the group's thread scratch,
/// + weight scratch,
/// the weight scratch being a quantized model's dequantized matrix: the
/// headroom covers what was fitted, not a bound or an exact count. The
/// widths and dtypes are in the count, so one table serves every
/// architecture and dtype of the family; the factors carry what the count
/// leaves out (library scratch, allocator rounding).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mold/estimate/estimate.hpp"
#include "mold/estimate/matmul_scratch.hpp"

namespace mold {

/// Matrix products a stage runs beside the same tensors: the scratch each
/// compute thread adds while they run (cpu_matmul_thread_scratch of the
/// largest; 0 on a GPU) and the bytes of the tensors alive then (counted
/// like the stage's bytes, at most them; every thread's scratch comes on
/// top). A stage whose peak is an elementwise step (a norm, a softmax) runs
/// its products beside less than that peak, so threads raise the op's peak
/// only once their scratch outgrows the difference.
struct StageProducts {
  double thread_scratch = 0;
  double alive = 0;
  std::string detail;  ///< "14 rows x 2560 inner x 9728 outer, bfloat16"
};

/// One stage of an op's layer: the bytes its code holds at once at the
/// stage's peak (what stays alive through the op included), batch included.
struct SequenceStage {
  std::string name;    ///< "attention": the table's key is name + "_factor"
  double bytes = 0;    ///< the count
  std::string detail;  ///< how it was counted, for --plan and the JSON
  /// Its products, by what is alive beside them (the layer's projections
  /// beside the layer's tensors, the timestep's MLP beside fewer).
  std::vector<StageProducts> products{};
};

/// What one workload makes of an architecture, per batch item.
struct SequenceShape {
  double tokens = 0;   ///< positions whose activations live at once
  double width = 0;    ///< the model's width (hidden size)
  double element = 0;  ///< bytes of an activation element
  double scores = 0;   ///< attention scores alive at once (rows x keys x heads)
  double score_element = 0;   ///< bytes of a score element
  std::string tokens_detail;  ///< "288 tokens (256 image + 14 caption, ...)"
  std::string scores_detail;  ///< "288 query rows x 288 keys x 2 heads"
  /// The counted stages; when there are any, the table's stage factors make
  /// the estimate and the per-token fields above are not used.
  std::vector<SequenceStage> stages;
  /// The scratch each compute thread past the first adds at the op's peak
  /// (cpu_matmul_thread_scratch of its largest product; 0 on a GPU): the
  /// constants are measured at one thread, so the estimate adds
  /// (workload.threads - 1) x this, with no constant of its own, in the
  /// per-token form; a staged shape uses its stages' own scratch instead.
  double thread_scratch = 0;
  /// "14 rows x 2560 inner x 4096 outer, bfloat16, oneDNN brgemm ..."
  std::string thread_scratch_detail{};

  /// A quantized model's dequantization buffer (workload.quantized): the
  /// largest matrix dequantized in the dtype, alive through the op. Counted
  /// exactly, outside the fitted constants and the headroom; 0 for dense
  /// weights.
  double weight_scratch = 0;
  /// "18432 x 3072 (img_mod.1), bfloat16"
  std::string weight_scratch_detail;

  /// Adds the stage `name` of `bytes`, its detail "<bytes>: <how>".
  void add_stage(const std::string& name, double bytes, const std::string& how);
  /// Adds to the stage `stage` (added before) products that run beside the
  /// same tensors: the largest cpu_matmul_thread_scratch of `products`, each
  /// over `rows` rows in the workload's dtype, on the cpu backend (none on
  /// any other), and the bytes alive while they run (`alive`, at most the
  /// stage's bytes: the default); `what` names them in the detail ("the
  /// timestep's MLP"). Raises the shape's thread_scratch to it. Throws
  /// std::logic_error for a stage not added.
  void count_thread_scratch(const Workload& workload, const std::string& stage,
                            double rows,
                            const std::vector<MatmulShape>& products,
                            std::optional<double> alive = std::nullopt,
                            const std::string& what = {});
  /// A matrix of the op, and the activation rows it multiplies.
  struct MatrixUse {
    double rows, columns;
    double input_rows;
    std::string name;
  };
  /// Sets weight_scratch when the workload's weights are quantized: the
  /// largest of `matrices` the op dequantizes, that many elements in the
  /// dtype on the cpu backend, whose dequantization writes straight into
  /// the buffer; on another backend also the tensor-operation
  /// dequantization's float32 value and product and its cast (2 x 4 B + the
  /// dtype's size per element; not measured). On the cpu a matrix applied
  /// to a few rows in a 16-bit dtype is multiplied from its blocks, not
  /// dequantized (cpu_multiplies_from_blocks()).
  void count_weight_scratch(const Workload& workload,
                            const std::vector<MatrixUse>& matrices);
};

/// The constants of one (op, backend) table of the sequence kind.
struct SequenceModel {
  std::string op;
  std::string backend;
  double bytes_per_token = 0;
  double bytes_per_score = 0;
  double fixed_bytes = 0;
  /// Per stage name ("attention"): measured / counted bytes.
  std::map<std::string, double> stage_factors;
  double headroom = 1.0;
  bool calibrated = false;
  /// The architecture the constants were measured on ("" when not said);
  /// an estimate for another one is a transfer through its sizes, not a
  /// measurement.
  std::string arch;
  std::string source;
  std::filesystem::path file;           ///< the file the table came from
  std::filesystem::path overridden_by;  ///< the user file that set some keys

  /// The estimate for `workload` (its backend, arch and batch) of `shape`.
  /// calibrated only where this table was measured on the workload's backend
  /// and architecture (a table of stage factors: on its backend). Throws
  /// InvalidArgument when the shape counts a stage the table has no factor
  /// for, or the table has a factor for a stage the shape does not count,
  /// or per-token constants beside stage factors.
  Estimate estimate(const Workload& workload, const SequenceShape& shape) const;

 private:
  Estimate staged_estimate(const Workload& workload,
                           const SequenceShape& shape) const;
};

}  // namespace mold
