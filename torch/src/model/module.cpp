#include "mold/model/module.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"
#include "mold/catalog/weight_layout.hpp"
#include "mold/tensor/checkpoint.hpp"
#include "mold/tensor/gguf_file.hpp"
#include "mold/tensor/linear_from_blocks.hpp"
#include "mold/tensor/safetensors.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

namespace {

std::string shape_text(at::IntArrayRef shape) { return c10::str(shape); }

bool declared_only(const at::Tensor& t) { return t.device().is_meta(); }

/// `values` (any dtype, any device) as `type` blocks on `device`.
bool quantizes_to(GgmlType type) {
  return type == GgmlType::q4_0 || type == GgmlType::q8_0 ||
         type == GgmlType::q4_k;
}

QuantizedTensor quantize_matrix(const at::Tensor& values, GgmlType type,
                                const c10::Device& device) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  const at::Tensor host = values.to(at::kCPU, at::kFloat).contiguous();
  const std::size_t n = std::size_t(host.numel());
  at::Tensor bytes =
      at::empty({int64_t(n / info->block_elements), int64_t(info->block_bytes)},
                at::kByte);
  quantize_blocks(type, host.data_ptr<float>(), n,
                  bytes.data_ptr<std::uint8_t>());
  return make_quantized(type, host.sizes().vec(), bytes.to(device));
}

}  // namespace

std::string LoadReport::warning() const {
  if (unexpected_count == 0) return {};
  return fmt::format(
      "{} tensor{} of the checkpoint {} not parameter{} of the "
      "model, e.g. '{}'; {} ignored",
      unexpected_count, unexpected_count == 1 ? "" : "s",
      unexpected_count == 1 ? "is" : "are", unexpected_count == 1 ? "" : "s",
      unexpected.front(), unexpected_count == 1 ? "it was" : "they were");
}

void Module::add(const std::string& name, std::vector<int64_t> shape) {
  if (params_.count(name))
    throw InvalidArgument(
        fmt::format("{}: parameter '{}' declared twice", describe(), name));
  params_[name] = at::empty(
      shape,
      at::TensorOptions().dtype(at::kFloat).device(c10::Device(c10::kMeta)));
}

std::function<at::Tensor(const std::string&)> Module::weights_under(
    std::string prefix) const {
  return [this, prefix = std::move(prefix)](const std::string& name) {
    const std::string full = prefix + name;
    return has(full) ? weight(full) : at::Tensor();
  };
}

at::Tensor Module::rows_of(const std::string& name,
                           const at::Tensor& ids) const {
  const auto q = quantized_.find(name);
  if (q == quantized_.end()) return at::embedding(p(name), ids);
  const QuantizedTensor& table = q->second;
  const std::int64_t columns = table.shape.at(1);
  const at::Tensor flat = ids.reshape({-1}).to(table.blocks.device());
  const at::Tensor bytes =
      table.blocks.reshape({table.shape[0], -1}).index_select(0, flat);
  const QuantizedTensor rows =
      table.float8 ? make_float8(*table.float8, {flat.numel(), columns}, bytes,
                                 table.scale.index_select(0, flat))
                   : make_quantized(table.type, {flat.numel(), columns}, bytes);
  std::vector<std::int64_t> shape = ids.sizes().vec();
  shape.push_back(columns);
  return dequantize(rows, dtype()).view(shape);
}

const at::Tensor& Module::p(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end())
    throw InvalidArgument(
        fmt::format("{} has no parameter '{}'", describe(), name));
  if (quantized_.count(name))
    throw InvalidArgument(fmt::format(
        "{}: parameter '{}' is held quantized; read it with weight()",
        describe(), name));
  if (declared_only(it->second))
    throw InvalidArgument(fmt::format(
        "{}: parameter '{}' has no values yet; load weights or seed the "
        "model first",
        describe(), name));
  return it->second;
}

at::Tensor Module::weight(const std::string& name) const {
  const auto q = quantized_.find(name);
  if (q == quantized_.end()) return p(name);
  return dequantize(q->second, dtype());
}

at::Tensor Module::weight(const std::string& name, at::Tensor& scratch) const {
  const auto q = quantized_.find(name);
  if (q == quantized_.end()) return p(name);
  const QuantizedTensor& tensor = q->second;
  const at::ScalarType type = dtype();
  if (!scratch.defined() || scratch.numel() < tensor.numel() ||
      scratch.scalar_type() != type ||
      scratch.device() != tensor.blocks.device()) {
    // Freed before the larger one is allocated: the two at once would be
    // the peak of the op (the first w1 after the attention's 3840 x 3840
    // in Z-Image: 28 MiB above the largest matrix).
    scratch.reset();
    scratch = at::empty(
        {tensor.numel()},
        at::TensorOptions().dtype(type).device(tensor.blocks.device()));
  }
  at::Tensor out = scratch.narrow(0, 0, tensor.numel());
  dequantize_into(tensor, out);
  return out.view(tensor.shape);
}

at::Tensor Module::linear_with(const at::Tensor& x, const std::string& name,
                               const at::Tensor& bias) const {
  const auto q = quantized_.find(name);
  if (q != quantized_.end() && linear_from_blocks_takes(x, q->second))
    return linear_from_blocks(x, q->second, bias);
  return at::linear(x, weight(name, weight_buffer_), bias);
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : params_) n += t.numel();
  return n;
}

Bytes Module::parameter_bytes(at::ScalarType dtype) const {
  return Bytes(parameter_count()) * Bytes(c10::elementSize(dtype));
}

Bytes Module::resident_bytes() const {
  Bytes n = 0;
  for (const auto& [name, t] : params_)
    if (!declared_only(t)) n += Bytes(t.nbytes());
  for (const auto& [name, q] : quantized_) n += q.bytes();
  return n;
}

bool Module::materialized() const {
  for (const auto& [name, t] : params_)
    if (declared_only(t) && !quantized_.count(name)) return false;
  return true;
}

c10::Device Module::device() const {
  for (const auto& [name, t] : params_)
    if (!declared_only(t)) return t.device();
  for (const auto& [name, q] : quantized_) return q.blocks.device();
  return c10::Device(c10::kCPU);
}

at::ScalarType Module::dtype() const {
  for (const auto& [name, t] : params_)
    if (!declared_only(t)) return t.scalar_type();
  return at::kFloat;
}

void Module::to(const c10::Device& device) {
  for (auto& [name, t] : params_)
    if (!declared_only(t) && t.device() != device) t = t.to(device);
  for (auto& [name, q] : quantized_) q.to(device);
}

void Module::to(const c10::Device& device, at::ScalarType dtype) {
  for (auto& [name, t] : params_)
    if (!declared_only(t) && (t.device() != device || t.scalar_type() != dtype))
      t = t.to(device).to(dtype);  // convert where the copy lands
  // Blocks keep their type: only the float parameters take `dtype`.
  for (auto& [name, q] : quantized_) q.to(device);
}

void Module::release() {
  quantized_.clear();
  for (auto& [name, t] : params_)
    if (!declared_only(t))
      t = at::empty(t.sizes(), at::TensorOptions()
                                   .dtype(at::kFloat)
                                   .device(c10::Device(c10::kMeta)));
}

at::Tensor Module::seeded_value(const std::string& name,
                                const std::vector<int64_t>& shape,
                                at::Generator& generator) const {
  const int64_t dims = int64_t(shape.size());
  if (ends_with(name, ".gamma") || (ends_with(name, ".weight") && dims == 1))
    return at::ones(shape, at::kFloat);  // norm scales
  if (ends_with(name, ".bias") && name.find("norm") != std::string::npos)
    return at::zeros(shape, at::kFloat);  // norm shifts
  if (ends_with(name, ".bias"))
    return at::randn(shape, generator, at::kFloat).mul_(0.02);
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  const int64_t fan_in = shape.empty() || shape[0] == 0 ? 1 : numel / shape[0];
  // In place: a seeded model never needs two copies of its largest tensor.
  return at::randn(shape, generator, at::kFloat)
      .div_(std::sqrt(double(std::max<int64_t>(fan_in, 1))));
}

void Module::init_from_seed(std::uint64_t seed, const c10::Device& device,
                            at::ScalarType dtype,
                            std::optional<GgmlType> quantize) {
  at::NoGradGuard no_grad;
  if (quantize && !quantizes_to(*quantize))
    throw InvalidArgument(
        fmt::format("{}: mold quantizes to Q4_0, Q8_0 and Q4_K, not {}",
                    describe(), ggml_type_name(std::uint32_t(*quantize))));
  quantized_.clear();
  at::Generator generator = at::detail::createCPUGenerator(seed);
  for (auto& [name, t] : params_) {  // name order: the same seed, the same
                                     // weights
    const std::vector<int64_t> shape = t.sizes().vec();
    at::Tensor value = seeded_value(name, shape, generator);
    if (quantize && quantizable(name, shape, *quantize)) {
      quantized_[name] = quantize_matrix(value, *quantize, device);
      t = at::empty(shape, at::TensorOptions()
                               .dtype(at::kFloat)
                               .device(c10::Device(c10::kMeta)));
    } else {
      t = value.to(device).to(dtype);
    }
  }
}

LoadReport Module::load(const WeightSet& weights, const c10::Device& device,
                        at::ScalarType dtype, const LoadOptions& options) {
  const Checkpoint checkpoint = Checkpoint::of(weights);
  return load(checkpoint,
              identity_mapping(checkpoint.listing(), options.prefix), device,
              dtype, options);
}

bool Module::keeps_blocks(const std::string& name, const TensorRecipe& recipe,
                          const TensorListing& listing,
                          std::int64_t parameter_dims) const {
  if (!reads_quantized_weights() || !ends_with(name, ".weight") ||
      parameter_dims != 2 || recipe.op == TensorOp::stack ||
      recipe.shape.size() != 2)
    return false;
  std::optional<std::string> type;
  for (const auto& source : recipe.sources) {
    const StoredTensor* t = listing.find(source);
    if (!t || !Checkpoint::blocks(*t) || t->shape.size() != 2) return false;
    if (type && *type != t->type) return false;
    type = t->type;
  }
  return type.has_value();
}

Bytes Module::loaded_bytes(const TensorListing& listing,
                           const LayoutMapping& mapping,
                           at::ScalarType dtype) const {
  const Bytes element = Bytes(c10::elementSize(dtype));
  Bytes total = 0;
  for (const auto& [name, t] : params_) {
    const TensorRecipe* recipe = mapping.recipe(name);
    if (!recipe || !keeps_blocks(name, *recipe, listing, t.dim())) {
      total += Bytes(t.numel()) * element;
      continue;
    }
    for (const auto& source : recipe->sources) {
      const StoredTensor& stored = *listing.find(source);
      const std::int64_t rows = recipe->op == TensorOp::rows
                                    ? recipe->row_end - recipe->row_begin
                                    : stored.rows();
      total += Bytes(stored.bytes / std::uint64_t(stored.rows())) * Bytes(rows);
      if (!stored.gguf) total += Bytes(rows) * sizeof(float);  // fp8 scales
    }
  }
  return total;
}

LoadComparison Module::compare(const TensorListing& listing,
                               const LayoutMapping& mapping) const {
  LoadComparison c;
  // A stored tensor that several parameters are made from (a fused qkv
  // split three ways) is one tensor: listed once.
  std::set<std::string> unreadable_seen, unexpected_seen;
  const auto unexpected = [&](const std::string& stored) {
    if (unexpected_seen.insert(stored).second) c.unexpected.push_back(stored);
  };
  for (const auto& [name, t] : params_) {
    const TensorRecipe* recipe = mapping.recipe(name);
    if (!recipe) {
      c.missing.push_back(mapping.prefix + name);
      continue;
    }
    if (at::IntArrayRef(recipe->shape) != t.sizes())
      c.misshaped.push_back(
          {name, recipe->sources.front(),
           recipe->op == TensorOp::copy &&
               recipe->sources.front() == mapping.prefix + name,
           recipe->shape, t.sizes().vec()});
    for (const auto& source : recipe->sources) {
      const StoredTensor& stored = *listing.find(source);
      if (!stored.gguf) continue;
      const GgmlTypeInfo* type = ggml_type_info(stored.ggml_type);
      if ((!type || !type->supported) &&
          unreadable_seen.insert(stored.name).second)
        c.unreadable.push_back({stored.name, stored.ggml_type});
    }
  }
  for (const auto& recipe : mapping.recipes)
    if (!params_.count(recipe.target) && !unused_tensor(recipe.target) &&
        !unused_tensor(recipe.sources.front()))
      unexpected(recipe.sources.front());
  for (const auto& name : mapping.unmapped)
    if (!unused_tensor(name)) unexpected(name);
  return c;
}

namespace {

/// What to check when a checkpoint lacks tensors the module needs.
std::string missing_advice(bool foreign, bool gguf_only,
                           const LayoutMapping& mapping,
                           const LoadOptions& options) {
  std::string advice =
      foreign ? "is the file of this model?"
      : gguf_only
          ? "is it a GGUF of this model?"
          : "is it a checkpoint of this model, in the diffusers layout?";
  if (!mapping.missing_hint.empty()) advice = mapping.missing_hint;
  if (!options.layouts.empty())
    advice += " mold reads these layouts (a marker tensor of each): " +
              options.layouts;
  return advice;
}

}  // namespace

LoadReport Module::check_load(const TensorListing& listing,
                              const LayoutMapping& mapping,
                              const std::string& origin,
                              const LoadOptions& options) const {
  const bool gguf_only =
      listing.gguf_architectures().size() == listing.files().size();
  const bool foreign = mapping.strict;
  auto fail = [&](const std::string& message) {
    if (gguf_only) throw GgufError(message);
    throw SafetensorsError(message);
  };
  const std::string where =
      foreign ? fmt::format("{} ({} layout)", origin, mapping.layout) : origin;
  // Every check first: nothing is allocated for a checkpoint that cannot load.
  // Missing tensors first: they say "another model" more clearly than a
  // shape does.
  const LoadComparison c = compare(listing, mapping);
  if (!c.missing.empty()) {
    std::string some;
    for (std::size_t i = 0; i < c.missing.size() && i < 3; ++i)
      some += (i ? "', '" : "") + c.missing[i];
    const std::string advice =
        missing_advice(foreign, gguf_only, mapping, options);
    fail(
        fmt::format("{}: {} of the {} tensors of the {} {} missing, e.g. "
                    "'{}'; {}",
                    where, c.missing.size(), params_.size(), describe(),
                    c.missing.size() == 1 ? "is" : "are", some, advice));
  }
  if (!c.misshaped.empty()) {
    const auto& m = c.misshaped.front();
    if (m.stored_as_named)
      fail(
          fmt::format("{}: tensor '{}' has shape {}, the {} expects {}; is "
                      "the checkpoint for this model and config?",
                      where, m.source, shape_text(m.shape), describe(),
                      shape_text(m.expected)));
    fail(
        fmt::format("{}: '{}', made from '{}', has shape {}, the {} expects "
                    "{}; is the file for this model and config?",
                    where, m.parameter, m.source, shape_text(m.shape),
                    describe(), shape_text(m.expected)));
  }
  if (!c.unreadable.empty())
    fail(fmt::format("{}: tensor '{}' {}", origin, c.unreadable.front().first,
                     unreadable_ggml_type(c.unreadable.front().second)));
  LoadReport report;
  report.unexpected_count = c.unexpected.size();
  for (std::size_t i = 0; i < c.unexpected.size() && i < 50; ++i)
    report.unexpected.push_back(c.unexpected[i]);
  if (options.strict && report.unexpected_count)
    fail(fmt::format("{}: {}", origin, report.warning()));
  return report;
}

namespace {

using RecipeSources = std::vector<const StoredTensor*>;

/// Each parameter's recipe with its first stored source, in the order the
/// bytes lie on disk: sequential reads at the disk's speed, no page of the
/// file kept resident.
std::vector<std::pair<const StoredTensor*, const TensorRecipe*>> disk_order(
    const std::map<std::string, at::Tensor>& params,
    const TensorListing& listing, const LayoutMapping& mapping) {
  std::vector<std::pair<const StoredTensor*, const TensorRecipe*>> order;
  for (const auto& [name, t] : params) {
    const TensorRecipe* recipe = mapping.recipe(name);
    order.emplace_back(listing.find(recipe->sources.front()), recipe);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->file, a.first->offset, a.second->row_begin) <
           std::tie(b.first->file, b.first->offset, b.second->row_begin);
  });
  return order;
}

/// A parameter kept as its stored blocks (GGUF or fp8, with the fp8 rows'
/// scales): the recipe's rows of each source, read straight into one byte
/// tensor, moved to `device`.
QuantizedTensor read_blocks(const Checkpoint& checkpoint,
                            const TensorRecipe& recipe,
                            const RecipeSources& sources,
                            const std::vector<std::int64_t>& shape,
                            const c10::Device& device) {
  std::int64_t total = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  for (const StoredTensor* t : sources) {
    const auto range = recipe.op == TensorOp::rows
                           ? std::make_pair(recipe.row_begin, recipe.row_end)
                           : std::make_pair(std::int64_t(0), t->rows());
    rows.push_back(range);
    total += std::int64_t(t->bytes / std::uint64_t(t->rows())) *
             (range.second - range.first);
  }
  at::Tensor bytes = at::empty({total}, at::TensorOptions().dtype(at::kByte));
  std::int64_t at_byte = 0;
  std::vector<at::Tensor> scales;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::int64_t count =
        std::int64_t(sources[i]->bytes / std::uint64_t(sources[i]->rows())) *
        (rows[i].second - rows[i].first);
    at::Tensor part = bytes.narrow(0, at_byte, count);
    checkpoint.read_block_rows(*sources[i], rows[i].first, rows[i].second,
                               part);
    at_byte += count;
    if (!sources[i]->gguf)
      scales.push_back(
          checkpoint.row_scales(*sources[i], rows[i].first, rows[i].second));
  }
  if (!device.is_cpu()) bytes = bytes.to(device);
  const auto float8 = float8_format(sources.front()->type);
  return float8 ? make_float8(*float8, shape, bytes, at::cat(scales).to(device))
                : make_quantized(GgmlType(sources.front()->ggml_type), shape,
                                 bytes);
}

/// The dtype the values are read in on the host: `dtype` on the cpu, but
/// float32 for fp8 values with scales (scaled before they take `dtype`);
/// off the host, the bytes travel as stored (float32 where the sources
/// differ or are blocks) and are converted there.
at::ScalarType host_dtype(const Checkpoint& checkpoint,
                          const RecipeSources& sources,
                          const c10::Device& device, at::ScalarType dtype) {
  if (!device.is_cpu()) {
    at::ScalarType stored = Checkpoint::blocks(*sources.front())
                                ? at::kFloat
                                : checkpoint.stored_dtype(*sources.front());
    for (const StoredTensor* t : sources)
      if (Checkpoint::blocks(*t) || checkpoint.stored_dtype(*t) != stored)
        stored = at::kFloat;
    return stored;
  }
  for (const StoredTensor* t : sources)
    if (checkpoint.listing().scale_of(*t)) return at::kFloat;
  return dtype;
}

/// Reads the recipe's values into `host` (its shape, contiguous): a copy,
/// a range of rows, sources concatenated by rows or stacked along
/// `recipe.dim`; fp8 values times their rows' scales.
void read_recipe_values(const Checkpoint& checkpoint,
                        const TensorRecipe& recipe,
                        const RecipeSources& sources, at::Tensor& host) {
  // `part` (whole rows of `t` from `first_row`, contiguous, in any shape)
  // times the rows' scales, for an fp8 weight with scales.
  auto scale = [&](const StoredTensor& t, std::int64_t first_row,
                   at::Tensor part) {
    if (!checkpoint.listing().scale_of(t) || part.numel() == 0) return;
    const std::int64_t row_elements = t.elements() / t.rows();
    const std::int64_t rows = part.numel() / row_elements;
    part.view({rows, row_elements})
        .mul_(checkpoint.row_scales(t, first_row, first_row + rows)
                  .view({rows, 1}));
  };
  switch (recipe.op) {
  case TensorOp::copy:
    checkpoint.read_values(*sources.front(), 0, host);
    scale(*sources.front(), 0, host);
    break;
  case TensorOp::rows: {
    const std::int64_t row_elements =
        sources.front()->elements() / sources.front()->rows();
    checkpoint.read_values(*sources.front(), recipe.row_begin * row_elements,
                           host);
    scale(*sources.front(), recipe.row_begin, host);
    break;
  }
  case TensorOp::concat: {
    std::int64_t row = 0;
    for (const StoredTensor* t : sources) {
      at::Tensor part = host.narrow(0, row, t->rows());
      checkpoint.read_values(*t, 0, part);
      scale(*t, 0, part);
      row += t->rows();
    }
    break;
  }
  case TensorOp::stack: {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      at::Tensor part = at::empty(
          sources[i]->shape, at::TensorOptions().dtype(host.scalar_type()));
      checkpoint.read_values(*sources[i], 0, part);
      scale(*sources[i], 0, part);
      host.select(recipe.dim, std::int64_t(i)).copy_(part);
    }
    break;
  }
  }
}

}  // namespace

LoadReport Module::load(const Checkpoint& checkpoint,
                        const LayoutMapping& mapping, const c10::Device& device,
                        at::ScalarType dtype, const LoadOptions& options) {
  const TensorListing& listing = checkpoint.listing();
  // Every check first: nothing is allocated for a checkpoint that cannot load.
  LoadReport report =
      check_load(listing, mapping, checkpoint.origin(), options);
  report.tensors = 0;
  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> loaded;
  std::map<std::string, QuantizedTensor> quantized;
  for (const auto& [first, recipe_pointer] :
       disk_order(params_, listing, mapping)) {
    const TensorRecipe& recipe = *recipe_pointer;
    const at::Tensor& declared = params_.at(recipe.target);
    RecipeSources sources;
    for (const auto& source : recipe.sources)
      sources.push_back(listing.find(source));
    ++report.tensors;
    if (keeps_blocks(recipe.target, recipe, listing, declared.dim())) {
      QuantizedTensor q = read_blocks(checkpoint, recipe, sources,
                                      declared.sizes().vec(), device);
      report.bytes += q.bytes();
      quantized[recipe.target] = std::move(q);
      loaded[recipe.target] = declared;  // stays a shape
      continue;
    }
    const at::ScalarType on_host =
        host_dtype(checkpoint, sources, device, dtype);
    at::Tensor host =
        at::empty(recipe.shape, at::TensorOptions().dtype(on_host));
    read_recipe_values(checkpoint, recipe, sources, host);
    at::Tensor value =
        device.is_cpu() && on_host == dtype ? host : host.to(device).to(dtype);
    report.bytes += Bytes(value.nbytes());
    loaded[recipe.target] = std::move(value);
  }
  params_ = std::move(loaded);
  quantized_ = std::move(quantized);
  return report;
}

bool Module::quantizable(const std::string& name,
                         const std::vector<int64_t>& shape, GgmlType type) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  return info && shape.size() == 2 && ends_with(name, ".weight") &&
         shape[1] > 0 && shape[1] % int64_t(info->block_elements) == 0;
}

void Module::quantize(GgmlType type) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  if (!info || !quantizes_to(type))
    throw InvalidArgument(
        fmt::format("{}: mold quantizes to Q4_0, Q8_0 and Q4_K, not {}",
                    describe(), ggml_type_name(std::uint32_t(type))));
  at::NoGradGuard no_grad;
  for (auto& [name, t] : params_) {
    if (declared_only(t) || !quantizable(name, t.sizes().vec(), type)) continue;
    quantized_[name] = quantize_matrix(t, type, t.device());
    t = at::empty(
        t.sizes(),
        at::TensorOptions().dtype(at::kFloat).device(c10::Device(c10::kMeta)));
  }
}

LoadReport Module::load_gguf(const GgufFile& file, const c10::Device& device,
                             at::ScalarType dtype, const LoadOptions& options) {
  const Checkpoint checkpoint = Checkpoint::of(file);
  return load(checkpoint,
              identity_mapping(checkpoint.listing(), options.prefix), device,
              dtype, options);
}

}  // namespace mold
