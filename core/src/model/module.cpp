#include "mold/model/module.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <cmath>

#include "mold/base/error.hpp"
#include "mold/tensor/safetensors.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

namespace {

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(at::IntArrayRef shape) { return c10::str(shape); }

bool declared_only(const at::Tensor& t) { return t.device().is_meta(); }

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

const at::Tensor& Module::p(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end())
    throw InvalidArgument(
        fmt::format("{} has no parameter '{}'", describe(), name));
  if (declared_only(it->second))
    throw InvalidArgument(fmt::format(
        "{}: parameter '{}' has no values yet; load weights or seed the "
        "model first",
        describe(), name));
  return it->second;
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
  return n;
}

bool Module::materialized() const {
  for (const auto& [name, t] : params_)
    if (declared_only(t)) return false;
  return true;
}

c10::Device Module::device() const {
  for (const auto& [name, t] : params_)
    if (!declared_only(t)) return t.device();
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
}

void Module::to(const c10::Device& device, at::ScalarType dtype) {
  for (auto& [name, t] : params_)
    if (!declared_only(t) && (t.device() != device || t.scalar_type() != dtype))
      t = t.to(device).to(dtype);  // convert where the copy lands
}

void Module::release() {
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
                            at::ScalarType dtype) {
  at::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(seed);
  for (auto& [name, t] : params_) {  // name order: the same seed, the same
                                     // weights
    at::Tensor value = seeded_value(name, t.sizes().vec(), generator);
    t = value.to(device).to(dtype);
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
  std::map<std::string, at::Tensor> loaded;
  for (const auto& [name, t] : params_) {
    const std::string stored = options.prefix + name;
    const at::Tensor view = weights.view(stored);
    // A copy always: on the cpu a same-dtype to() would alias the mapping.
    // Off the host, the bytes travel as stored and are converted there.
    at::Tensor value =
        device.is_cpu()
            ? view.to(device, dtype, /*non_blocking=*/false, /*copy=*/true)
            : view.to(device).to(dtype);
    weights.release_pages(stored);
    report.bytes += Bytes(value.nbytes());
    ++report.tensors;
    loaded[name] = std::move(value);
  }
  params_ = std::move(loaded);
  return report;
}

}  // namespace mold
