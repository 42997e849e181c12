#include "mold/runtime/module_component.hpp"

#include <fmt/format.h>

#include "mold/device/backend.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

std::string WeightSource::describe() const {
  return checkpoint ? checkpoint->string()
                    : fmt::format("seeded weights (seed {})", seed);
}

ModuleComponent::ModuleComponent(std::string name,
                                 std::unique_ptr<Module> module,
                                 WeightSource source, at::ScalarType dtype,
                                 std::function<void(const std::string&)> warn)
    : name_(std::move(name)),
      module_(std::move(module)),
      source_(std::move(source)),
      dtype_(dtype),
      warn_(std::move(warn)) {}

Bytes ModuleComponent::device_bytes() const {
  return module_->parameter_bytes(dtype_);
}

void ModuleComponent::load(Backend& backend) {
  if (residency_ == Residency::device) return;
  const c10::Device device = backend.torch_device();
  try {
    if (host_copy_) {
      module_->to(device, dtype_);
    } else if (source_.checkpoint) {
      const WeightSet weights = WeightSet::open(*source_.checkpoint);
      LoadOptions options = source_.options;
      if (options.prefix.empty())
        options.prefix = module_->stored_prefix(weights);
      const LoadReport report = module_->load(weights, device, dtype_, options);
      if (warn_ && !report.warning().empty())
        warn_(
            fmt::format("{}: {}", weights.origin().string(), report.warning()));
    } else {
      module_->init_from_seed(source_.seed, device, dtype_);
    }
  } catch (...) {
    // Leave it where it was: a half-moved module holds memory on two sides.
    if (!host_copy_) module_->release();
    throw;
  }
  host_copy_ = false;
  residency_ = Residency::device;
}

void ModuleComponent::park() {
  if (residency_ != Residency::device) return;
  if (module_->device().is_cpu()) {
    module_->release();
    host_copy_ = false;
  } else {
    module_->to(c10::Device(c10::kCPU));
    host_copy_ = true;
  }
  residency_ = Residency::parked;
}

void ModuleComponent::unload() {
  module_->release();
  host_copy_ = false;
  residency_ = Residency::unloaded;
}

}  // namespace mold
