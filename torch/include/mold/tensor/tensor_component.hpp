#pragma once
/// A model component whose weights are libtorch tensors.

#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mold/cache/cache.hpp"

namespace mold {

/// Weights as tensors. On a GPU backend parking copies them to host memory and
/// frees the device copy; on the cpu backend (device and host are the same
/// memory) parking drops them and `make` rebuilds them (from a file or a seed)
/// when they come back. Either way a parked component holds zero device bytes.
class TensorComponent final : public CachedComponent {
 public:
  /// Builds the weights on a device.
  using Factory = std::function<std::vector<at::Tensor>(const c10::Device&)>;

  /// `planned_bytes`: the size before the first load (e.g. from the model
  /// catalogue); replaced by the measured size once loaded.
  TensorComponent(std::string name, Bytes planned_bytes, Factory make);

  const std::string& name() const override { return name_; }
  Bytes device_bytes() const override { return bytes_; }
  Residency residency() const override { return residency_; }
  void load(Backend& backend) override;
  void park() override;
  void unload() override;

  /// The resident weights. Throws InvalidArgument when not on the device.
  const std::vector<at::Tensor>& tensors() const;

 private:
  std::string name_;
  Bytes bytes_;
  Factory make_;
  Residency residency_ = Residency::unloaded;
  std::vector<at::Tensor> device_tensors_;
  std::vector<at::Tensor> host_tensors_;  // parked copies (GPU backends only)
  std::optional<c10::Device> device_;
};

/// Throws InvalidOutput when `output` has a non-finite value, or is all zeros
/// while `input` is not ("silent zero output", incident 2 of
/// docs/incidents.md).
void check_output(const at::Tensor& output, const at::Tensor& input);

}  // namespace mold
