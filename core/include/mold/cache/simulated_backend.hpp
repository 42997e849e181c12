#pragma once
/// A backend that only counts bytes: for planning ("would this fit on a 48 GB
/// card?"), trace replays and tests of the cache's bookkeeping.

#include <memory>
#include <string>

#include "mold/cache/cache.hpp"
#include "mold/device/backend.hpp"

namespace mold {

class SimulatedBackend final : public Backend {
 public:
  SimulatedBackend(std::string device_name, Bytes capacity);

  std::string name() const override { return "simulated"; }
  std::string device_name() const override { return device_name_; }
  MemoryStats stats() const override;
  void reset_peak() override { peak_ = allocated_; }
  void empty_cache() override { cached_ = 0; }
  void synchronize_and_check() override {}
  c10::Device torch_device() const override;

  /// Takes `bytes`; throws a CUDA-style OOM text ("... out of memory. Tried to
  /// allocate X. ... total capacity of ...") when they do not fit.
  void allocate(Bytes bytes);
  /// Returns `bytes`; with `keep_cached`, the allocator keeps them (reserved,
  /// unused) until empty_cache().
  void release(Bytes bytes, bool keep_cached = false);
  /// Memory other processes hold on the device (what a shared GPU has
  /// taken): not free, not this process's (stats().device_used counts it).
  void set_other_processes(Bytes bytes);

 private:
  std::string device_name_;
  Bytes capacity_;
  Bytes allocated_ = 0;
  Bytes cached_ = 0;
  Bytes peak_ = 0;
  Bytes others_ = 0;
};

/// A component of a given size whose loads are counted on a SimulatedBackend.
class SimulatedComponent final : public CachedComponent {
 public:
  SimulatedComponent(std::string name, Bytes bytes, double reload_cost = -1);

  const std::string& name() const override { return name_; }
  Bytes device_bytes() const override { return bytes_; }
  double reload_cost() const override;
  Residency residency() const override { return residency_; }
  /// `backend` must be a SimulatedBackend.
  void load(Backend& backend) override;
  void park() override;
  void unload() override;

 private:
  std::string name_;
  Bytes bytes_;
  double reload_cost_;
  Residency residency_ = Residency::unloaded;
  SimulatedBackend* on_ = nullptr;
};

}  // namespace mold
