#pragma once
/// The base of every model architecture (VAE, text encoder, transformer):
/// parameters under the public checkpoint's names and shapes, declared first
/// and given values later, either from a seed (reproducible, no checkpoint) or
/// from a checkpoint, tensor by tensor, onto the device in the dtype asked for.

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/tensor/quantized_tensor.hpp"

namespace mold {

class WeightSet;
class GgufFile;
class Checkpoint;
struct LayoutMapping;
struct TensorRecipe;
class TensorListing;

struct LoadOptions {
  /// Names in the checkpoint are `prefix` + the parameter's name
  /// ("model." for a transformers *ForCausalLM checkpoint of a base model).
  std::string prefix;
  /// Tensors of the checkpoint that the model has no parameter for are errors
  /// instead of warnings.
  bool strict = false;
  /// Said when tensors are missing: the layouts the component is read from
  /// ("diffusers ('x'), comfyui ('y')"), when the caller knows them.
  std::string layouts;
};

/// What a load did.
struct LoadReport {
  std::size_t tensors = 0;  ///< parameters loaded
  Bytes bytes = 0;          ///< their bytes on the device
  /// Checkpoint tensors the model has no parameter for (each one a warning
  /// for the caller to show); at most the first 50, `unexpected_count` all.
  std::vector<std::string> unexpected;
  std::size_t unexpected_count = 0;
  /// "8 tensors of x.safetensors are not parameters of the zimage VAE (tiny),
  /// e.g. 'post_quant_conv.weight'; they were ignored"; empty when none.
  std::string warning() const;
};

/// How a checkpoint's tensors meet a module's parameters, from the listing
/// alone (no tensor read): what molddiag inspect reports, and what
/// check_load() refuses.
struct LoadComparison {
  /// Parameters no tensor makes, as stored names (the mapping's prefix +
  /// the parameter's name).
  std::vector<std::string> missing;
  struct Misshaped {
    std::string parameter;  ///< the model's name
    std::string source;     ///< the stored tensor it is made from (the first)
    bool stored_as_named = false;     ///< a plain copy of a tensor of that name
    std::vector<std::int64_t> shape;  ///< what the file makes
    std::vector<std::int64_t> expected;  ///< what the model declares
  };
  std::vector<Misshaped> misshaped;
  /// Stored tensors of ggml types mold does not read: name and type id.
  std::vector<std::pair<std::string, std::uint32_t>> unreadable;
  /// Stored tensors the model has no parameter for (every one).
  std::vector<std::string> unexpected;
  bool loads() const {
    return missing.empty() && misshaped.empty() && unreadable.empty();
  }
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Names the model in messages: "zimage VAE (tiny)".
  virtual std::string describe() const = 0;

  /// Every parameter, in name order. Before init_from_seed() or load() they
  /// are shapes only (on the meta device, no memory).
  const std::map<std::string, at::Tensor>& parameters() const {
    return params_;
  }
  int64_t parameter_count() const;
  /// Bytes the parameters take (or will take) in `dtype`.
  Bytes parameter_bytes(at::ScalarType dtype) const;
  /// Bytes they take now (0 while declared only).
  Bytes resident_bytes() const;
  /// Whether every parameter has values (seeded or loaded).
  bool materialized() const;
  /// Where the parameters are and their dtype (cpu/float32 while declared).
  c10::Device device() const;
  at::ScalarType dtype() const;

  /// Moves every parameter (a no-op for those already there).
  void to(const c10::Device& device);
  void to(const c10::Device& device, at::ScalarType dtype);
  /// Frees every parameter's memory; they become shapes only again.
  void release();

  /// Deterministic weights from `seed`, made on the host in float32 in name
  /// order (the same seed gives the same model on every backend), then moved
  /// to `device` in `dtype` one tensor at a time.
  /// With `quantize`, each matrix quantize() takes is quantized as soon as
  /// it is made (never all of them in float at once).
  void init_from_seed(std::uint64_t seed,
                      const c10::Device& device = c10::Device(c10::kCPU),
                      at::ScalarType dtype = at::kFloat,
                      std::optional<GgmlType> quantize = std::nullopt);
  /// Copies every parameter from `weights` onto `device` in `dtype`, one
  /// tensor at a time, dropping each tensor's file pages once copied, so host
  /// memory stays near one tensor above what the device copy needs. Checks
  /// everything before allocating: a missing tensor or a shape mismatch is a
  /// SafetensorsError naming the checkpoint, the tensor, the shapes and the
  /// model; unexpected tensors are reported (or errors when options.strict).
  /// On failure the parameters are left as they were.
  LoadReport load(const WeightSet& weights, const c10::Device& device,
                  at::ScalarType dtype, const LoadOptions& options = {});
  /// Copies every parameter from a GGUF file onto `device`: tensors the file
  /// stores quantized stay quantized there (their blocks, dequantized as
  /// each layer runs: weight()), the others are converted to `dtype`. The
  /// same checks and report as load(); a quantized tensor for a parameter
  /// that is not a matrix, or of a type mold cannot dequantize, is a
  /// GgufError naming it.
  LoadReport load_gguf(const GgufFile& file, const c10::Device& device,
                       at::ScalarType dtype, const LoadOptions& options = {});
  /// The loader under both: every parameter made from `checkpoint` by its
  /// layout's `mapping` (mold/catalog/weight_layout.hpp) while the tensors
  /// stream in file order: a copy (reshaped where the layout squeezes), a
  /// block of rows of a fused tensor, a concatenation or a stack, each read
  /// straight into its place, so host memory stays near the largest tensor.
  /// Matrices stored as ggml blocks stay blocks (rows and concatenations
  /// of whole rows too); the rest take `dtype`. The same checks first and
  /// report as load(); `options.prefix` is the mapping's.
  LoadReport load(const Checkpoint& checkpoint, const LayoutMapping& mapping,
                  const c10::Device& device, at::ScalarType dtype,
                  const LoadOptions& options = {});
  /// The checks load() makes before it allocates anything, on the listing
  /// alone (`origin` names the files in messages): every parameter made by
  /// the mapping in its shape, every block type readable, and the report of
  /// the tensors the model has no parameter for (an error with
  /// options.strict). What --plan finds wrong with a file before a run.
  LoadReport check_load(const TensorListing& listing,
                        const LayoutMapping& mapping, const std::string& origin,
                        const LoadOptions& options = {}) const;
  /// Every parameter against what `mapping` makes of `listing`: all that is
  /// missing, mis-shaped, unreadable or unexpected, nothing thrown.
  LoadComparison compare(const TensorListing& listing,
                         const LayoutMapping& mapping) const;
  /// Whether the module's forward reads every matrix through weight(),
  /// weights_under() or rows_of(), so that matrices may be held quantized
  /// (denoisers and text encoders); a module that reads them with p() (a
  /// VAE) has every parameter converted on load.
  virtual bool reads_quantized_weights() const { return false; }
  /// Whether `recipe` makes parameter `name` (of `parameter_dims`
  /// dimensions) held as it is stored: a "*.weight" matrix of a module that
  /// reads_quantized_weights(), whose sources are all ggml blocks or fp8
  /// bytes of one type, copied, split by rows or concatenated.
  bool keeps_blocks(const std::string& name, const TensorRecipe& recipe,
                    const TensorListing& listing,
                    std::int64_t parameter_dims) const;
  /// Bytes the parameters take on the device once loaded from `listing` by
  /// `mapping` in `dtype`: blocks at their stored size, the rest converted.
  Bytes loaded_bytes(const TensorListing& listing, const LayoutMapping& mapping,
                     at::ScalarType dtype) const;
  /// Replaces every matrix parameter `name`.weight whose rows are whole
  /// blocks of `type` (Q4_0, Q8_0 or Q4_K) by its blocks, as
  /// quantize_blocks() makes them: a seeded model's q4 and q8 variants (Q4_K
  /// for benchmarks). Others stay.
  void quantize(GgmlType type);
  /// Whether `name` is held quantized (ggml blocks or fp8 bytes).
  bool is_quantized(const std::string& name) const {
    return quantized_.count(name) > 0;
  }
  /// The parameters held quantized.
  const std::map<std::string, QuantizedTensor>& quantized() const {
    return quantized_;
  }
  /// Which parameters quantize(`type`) quantizes: "*.weight" matrices whose
  /// rows are whole blocks of the type.
  static bool quantizable(const std::string& name,
                          const std::vector<int64_t>& shape, GgmlType type);

  /// The prefix the published checkpoints put before this model's names
  /// ("model." for a transformers *ForCausalLM checkpoint of a base model),
  /// judged from `weights`; "" by default. Loaders that are given no
  /// LoadOptions::prefix use it.
  virtual std::string stored_prefix(const WeightSet& /*weights*/) const {
    return {};
  }
  /// Whether `stored_name`, a tensor of the checkpoint that is not one of
  /// the parameters, is one the published checkpoints store and this model
  /// does not use (the lm_head of a language model used as an encoder):
  /// such tensors are neither loaded nor reported as unexpected.
  virtual bool unused_tensor(const std::string& /*stored_name*/) const {
    return false;
  }

  /// While alive, the module's weight buffer stays between forward passes
  /// (a denoise phase's steps: each would otherwise fault the pages of its
  /// largest dequantized matrix in again, 72 MiB for Qwen-Image's
  /// feed-forward on the cpu); freed when the last keeper goes. Its bytes are
  /// the phase's working memory, which the estimates count.
  class KeepWeightBuffer {
   public:
    explicit KeepWeightBuffer(const Module& module) : module_(module) {
      ++module_.weight_buffer_kept_;
    }
    ~KeepWeightBuffer() {
      if (--module_.weight_buffer_kept_ == 0) module_.weight_buffer_.reset();
    }
    KeepWeightBuffer(const KeepWeightBuffer&) = delete;
    KeepWeightBuffer& operator=(const KeepWeightBuffer&) = delete;

   private:
    const Module& module_;
  };

 protected:
  Module() = default;
  /// Declares a parameter (shape only until seeded or loaded).
  void add(const std::string& name, std::vector<int64_t> shape);
  /// A parameter's values. Throws InvalidArgument for an unknown name, one
  /// without values yet, or one held quantized (use weight()).
  const at::Tensor& p(const std::string& name) const;
  /// A weight's values in the module's dtype: p(name), or for one held
  /// quantized its blocks dequantized now (a temporary the layer frees).
  at::Tensor weight(const std::string& name) const;
  /// The same, a quantized weight dequantized into `scratch` (grown when
  /// too small, else reused): a forward pass that passes one buffer for all
  /// its layers faults its pages in once, not once per layer. The result
  /// aliases `scratch` until the next call.
  at::Tensor weight(const std::string& name, at::Tensor& scratch) const;
  /// at::linear(x, weight(name, weight_buffer_), bias): a denoiser's layer.
  /// A quantized matrix applied to a few rows (a modulation layer's
  /// timestep vector) is multiplied straight from its blocks
  /// (mold/tensor/linear_from_blocks.hpp), never dequantized.
  at::Tensor linear_with(const at::Tensor& x, const std::string& name,
                         const at::Tensor& bias) const;
  bool has(const std::string& name) const { return params_.count(name) > 0; }
  /// Rows `ids` (int64, any shape) of an embedding matrix `name`, shape
  /// ids.shape + [columns], in the module's dtype: at::embedding() of
  /// p(name), or for one held quantized only those rows' blocks dequantized
  /// (never the whole vocabulary).
  at::Tensor rows_of(const std::string& name, const at::Tensor& ids) const;
  /// The weights named `prefix` + name, by name ("layers.3." then
  /// "self_attn.q_proj.weight"): an undefined tensor for one the module does
  /// not have (a bias), else as weight() (a quantized matrix dequantized for
  /// its use only). What a shared layer (mold/model/decoder_layer.hpp)
  /// reads its weights through.
  std::function<at::Tensor(const std::string&)> weights_under(
      std::string prefix) const;
  /// The buffer a forward pass dequantizes its quantized matrices into, one
  /// at a time (weight(name, weight_buffer_)). Not reentrant: mold runs one
  /// job at a time on a model.
  mutable at::Tensor weight_buffer_;
  mutable int weight_buffer_kept_ = 0;  ///< KeepWeightBuffer's alive
  /// Frees weight_buffer_ when a forward pass ends, however it ends, unless
  /// a KeepWeightBuffer keeps it for the steps of a phase.
  struct WeightBufferRelease {
    const Module& module;
    ~WeightBufferRelease() {
      if (module.weight_buffer_kept_ == 0) module.weight_buffer_.reset();
    }
  };
  /// The value init_from_seed() gives one parameter (float32, on the host):
  /// norm scales 1, norm shifts 0, other biases N(0, 0.02^2), other weights
  /// N(0, 1/fan_in). Architectures override it where their reference
  /// initialises differently.
  virtual at::Tensor seeded_value(const std::string& name,
                                  const std::vector<int64_t>& shape,
                                  at::Generator& generator) const;

 private:
  std::map<std::string, at::Tensor> params_;
  /// Parameters held as GGUF blocks (their params_ entry stays a shape).
  std::map<std::string, QuantizedTensor> quantized_;
};

}  // namespace mold
