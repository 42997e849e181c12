#include "mold/tensor/tensor_component.hpp"

#include <fmt/format.h>

#include "mold/cache/recovery.hpp"

namespace mold {

TensorComponent::TensorComponent(std::string name, Bytes planned_bytes,
                                 Factory make)
    : name_(std::move(name)), bytes_(planned_bytes), make_(std::move(make)) {
  if (!make_)
    throw InvalidArgument("TensorComponent '" + name_ + "' needs a factory");
}

void TensorComponent::load(Backend& backend) {
  if (residency_ == Residency::device) return;
  const c10::Device device = backend.torch_device();
  std::vector<at::Tensor> loaded;
  if (!host_tensors_.empty() && !device.is_cpu()) {
    for (const auto& t : host_tensors_) loaded.push_back(t.to(device));
  } else {
    loaded = make_(device);
  }
  Bytes bytes = 0;
  for (const auto& t : loaded) bytes += Bytes(t.nbytes());
  // Only now, with everything allocated, does the component change state.
  device_tensors_ = std::move(loaded);
  host_tensors_.clear();
  device_ = device;
  bytes_ = bytes;
  residency_ = Residency::device;
}

void TensorComponent::park() {
  if (residency_ != Residency::device) return;
  if (device_ && !device_->is_cpu()) {
    std::vector<at::Tensor> host;
    for (const auto& t : device_tensors_)
      host.push_back(t.to(c10::Device(c10::kCPU)));
    host_tensors_ = std::move(host);
  }
  device_tensors_.clear();
  residency_ = Residency::parked;
}

void TensorComponent::unload() {
  device_tensors_.clear();
  host_tensors_.clear();
  residency_ = Residency::unloaded;
}

const std::vector<at::Tensor>& TensorComponent::tensors() const {
  if (residency_ != Residency::device)
    throw InvalidArgument(
        fmt::format("'{}' is {}, not on the device: acquire it from the cache",
                    name_, to_string(residency_)));
  return device_tensors_;
}

void check_output(const at::Tensor& output, const at::Tensor& input) {
  if (!output.defined())
    throw InvalidOutput("the operation produced no tensor");
  if (!at::isfinite(output).all().item<bool>())
    throw InvalidOutput(
        fmt::format("the output of shape {} has non-finite values",
                    c10::str(output.sizes())));
  const bool output_zero =
      output.numel() > 0 && !output.ne(0).any().item<bool>();
  const bool input_zero =
      !input.defined() || input.numel() == 0 || !input.ne(0).any().item<bool>();
  if (output_zero && !input_zero)
    throw InvalidOutput(
        fmt::format("silent zero output: the output of shape {} is all zeros "
                    "while the input is not",
                    c10::str(output.sizes())));
}

}  // namespace mold
