#include "mold/model/module.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"
#include "mold/tensor/gguf_file.hpp"
#include "mold/tensor/safetensors.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

namespace {

std::string shape_text(at::IntArrayRef shape) { return c10::str(shape); }

bool declared_only(const at::Tensor& t) { return t.device().is_meta(); }

/// `values` (any dtype, any device) as `type` blocks on `device`.
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

std::function<const at::Tensor*(const std::string&)> Module::parameters_under(
    std::string prefix) const {
  return [this, prefix = std::move(prefix)](
             const std::string& name) -> const at::Tensor* {
    const std::string full = prefix + name;
    return has(full) ? &p(full) : nullptr;
  };
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
      scratch.device() != tensor.blocks.device())
    scratch = at::empty(
        {tensor.numel()},
        at::TensorOptions().dtype(type).device(tensor.blocks.device()));
  at::Tensor out = scratch.narrow(0, 0, tensor.numel());
  dequantize_into(tensor, out);
  return out.view(tensor.shape);
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
  for (auto& [name, q] : quantized_)
    if (q.blocks.device() != device) q.blocks = q.blocks.to(device);
}

void Module::to(const c10::Device& device, at::ScalarType dtype) {
  for (auto& [name, t] : params_)
    if (!declared_only(t) && (t.device() != device || t.scalar_type() != dtype))
      t = t.to(device).to(dtype);  // convert where the copy lands
  // Blocks keep their type: only the float parameters take `dtype`.
  for (auto& [name, q] : quantized_)
    if (q.blocks.device() != device) q.blocks = q.blocks.to(device);
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
  if (quantize && *quantize != GgmlType::q4_0 && *quantize != GgmlType::q8_0)
    throw InvalidArgument(
        fmt::format("{}: mold quantizes to Q4_0 and Q8_0, not {}", describe(),
                    ggml_type_name(std::uint32_t(*quantize))));
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
  const std::string origin = weights.origin().string();
  // Every check first: nothing is allocated for a checkpoint that cannot load.
  // Missing tensors first: they say "another model" more clearly than a
  // shape does.
  std::vector<std::string> missing;
  for (const auto& [name, t] : params_)
    if (!weights.contains(options.prefix + name))
      missing.push_back(options.prefix + name);
  if (!missing.empty()) {
    std::string some;
    for (std::size_t i = 0; i < missing.size() && i < 3; ++i)
      some += (i ? "', '" : "") + missing[i];
    throw SafetensorsError(fmt::format(
        "{}: {} of the {} tensors of the {} {} missing, e.g. '{}'; is it a "
        "checkpoint of this model, in the diffusers layout?",
        origin, missing.size(), params_.size(), describe(),
        missing.size() == 1 ? "is" : "are", some));
  }
  for (const auto& [name, t] : params_) {
    const std::string stored = options.prefix + name;
    const SafetensorsEntry& e = weights.entry(stored);
    if (at::IntArrayRef(e.shape) != t.sizes())
      throw SafetensorsError(
          fmt::format("{}: tensor '{}' has shape {}, the {} expects {}; is the "
                      "checkpoint for this model and config?",
                      origin, stored, shape_text(e.shape), describe(),
                      shape_text(t.sizes())));
  }
  LoadReport report;
  for (const auto& name : weights.names()) {
    const bool ours =
        name.compare(0, options.prefix.size(), options.prefix) == 0 &&
        params_.count(name.substr(options.prefix.size()));
    if (ours || unused_tensor(name)) continue;
    if (report.unexpected.size() < 50) report.unexpected.push_back(name);
    ++report.unexpected_count;
  }
  if (options.strict && report.unexpected_count)
    throw SafetensorsError(fmt::format("{}: {}", origin, report.warning()));

  at::NoGradGuard no_grad;
  // In the order the bytes lie on disk, each read straight into its tensor:
  // sequential reads at the disk's speed, no page of the file kept resident.
  std::vector<std::string> stored_names;
  stored_names.reserve(params_.size());
  for (const auto& [name, t] : params_)
    stored_names.push_back(options.prefix + name);
  std::map<std::string, at::Tensor> loaded;
  for (const std::string& stored : weights.in_file_order(stored_names)) {
    const std::string name = stored.substr(options.prefix.size());
    const at::IntArrayRef shape = params_.at(name).sizes();
    at::Tensor value;
    if (device.is_cpu()) {
      value = at::empty(shape, at::TensorOptions().dtype(dtype));
      weights.read_into(stored, value);
    } else {
      // Off the host, the bytes travel as stored and are converted there.
      at::Tensor host = at::empty(
          shape, at::TensorOptions().dtype(weights.view(stored).scalar_type()));
      weights.read_into(stored, host);
      value = host.to(device).to(dtype);
    }
    report.bytes += Bytes(value.nbytes());
    ++report.tensors;
    loaded[name] = std::move(value);
  }
  params_ = std::move(loaded);
  quantized_.clear();
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
  if (!info || (type != GgmlType::q4_0 && type != GgmlType::q8_0))
    throw InvalidArgument(
        fmt::format("{}: mold quantizes to Q4_0 and Q8_0, not {}", describe(),
                    ggml_type_name(std::uint32_t(type))));
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
  const std::string origin = file.path().string();
  std::vector<std::string> missing;
  for (const auto& [name, t] : params_)
    if (!file.tensor(options.prefix + name))
      missing.push_back(options.prefix + name);
  if (!missing.empty()) {
    std::string some;
    for (std::size_t i = 0; i < missing.size() && i < 3; ++i)
      some += (i ? "', '" : "") + missing[i];
    throw GgufError(fmt::format(
        "{}: {} of the {} tensors of the {} {} missing, e.g. '{}'; is it a "
        "GGUF of this model?",
        origin, missing.size(), params_.size(), describe(),
        missing.size() == 1 ? "is" : "are", some));
  }
  for (const auto& [name, t] : params_) {
    const GgufTensorInfo& info = *file.tensor(options.prefix + name);
    const std::vector<std::int64_t> shape = info.torch_shape();
    if (at::IntArrayRef(shape) != t.sizes())
      throw GgufError(
          fmt::format("{}: tensor '{}' has shape {}, the {} expects {}; is the "
                      "file for this model and config?",
                      origin, info.name, shape_text(shape), describe(),
                      shape_text(t.sizes())));
    const GgmlTypeInfo* type = ggml_type_info(info.type);
    if (!type || !type->supported)
      throw GgufError(fmt::format(
          "{}: tensor '{}' is {}, which mold cannot dequantize (it reads {})",
          origin, info.name, ggml_type_name(info.type),
          supported_ggml_types()));
  }
  LoadReport report;
  for (const GgufTensorInfo& info : file.tensors()) {
    const bool ours =
        info.name.compare(0, options.prefix.size(), options.prefix) == 0 &&
        params_.count(info.name.substr(options.prefix.size()));
    if (ours || unused_tensor(info.name)) continue;
    if (report.unexpected.size() < 50) report.unexpected.push_back(info.name);
    ++report.unexpected_count;
  }
  if (options.strict && report.unexpected_count)
    throw GgufError(fmt::format("{}: {}", origin, report.warning()));

  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> loaded;
  std::map<std::string, QuantizedTensor> quantized;
  // In the order the tensors lie in the file: sequential reads.
  std::vector<std::pair<const GgufTensorInfo*, const std::string*>> order;
  for (const auto& [name, t] : params_)
    order.emplace_back(file.tensor(options.prefix + name), &name);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first->offset < b.first->offset;
  });
  for (const auto& [info_pointer, name_pointer] : order) {
    const GgufTensorInfo& info = *info_pointer;
    const std::string& name = *name_pointer;
    const at::Tensor& t = params_.at(name);
    const auto type = GgmlType(info.type);
    const bool plain = type == GgmlType::f32 || type == GgmlType::f16 ||
                       type == GgmlType::bf16;
    if (!plain && t.dim() == 2) {
      QuantizedTensor q = load_quantized(file, info, device);
      report.bytes += q.bytes();
      quantized[name] = std::move(q);
      loaded[name] = t;  // stays a shape
    } else {
      at::Tensor value;
      if (plain) {
        const at::ScalarType stored = type == GgmlType::f32   ? at::kFloat
                                      : type == GgmlType::f16 ? at::kHalf
                                                              : at::kBFloat16;
        at::Tensor host =
            at::empty(t.sizes(), at::TensorOptions().dtype(stored));
        file.read(info, host.data_ptr());
        value = host.to(device, dtype);
      } else {  // a quantized vector: small, dequantized once
        value = dequantize(load_quantized(file, info, at::Device(at::kCPU)),
                           at::kFloat)
                    .to(device, dtype);
      }
      report.bytes += Bytes(value.nbytes());
      loaded[name] = std::move(value);
    }
    ++report.tensors;
  }
  params_ = std::move(loaded);
  quantized_ = std::move(quantized);
  return report;
}

}  // namespace mold
