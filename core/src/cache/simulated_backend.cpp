#include "mold/cache/simulated_backend.hpp"

#include <c10/core/Device.h>
#include <fmt/format.h>

#include <stdexcept>

namespace mold {

SimulatedBackend::SimulatedBackend(std::string device_name, Bytes capacity)
    : device_name_(std::move(device_name)), capacity_(capacity) {}

MemoryStats SimulatedBackend::stats() const {
  MemoryStats s;
  s.total = capacity_;
  s.allocated = allocated_;
  s.reserved = allocated_ + cached_;
  s.device_used = s.reserved + others_;
  s.free = capacity_ > s.device_used ? capacity_ - s.device_used : 0;
  s.peak_allocated = peak_;
  s.peak_reserved = peak_;
  return s;
}

c10::Device SimulatedBackend::torch_device() const {
  return c10::Device(c10::kCPU);
}

void SimulatedBackend::set_other_processes(Bytes bytes) { others_ = bytes; }

void SimulatedBackend::allocate(Bytes bytes) {
  // As PyTorch's caching allocator: cached blocks are reused (or freed and
  // retried) before an allocation fails, so it fails only when live bytes would
  // exceed capacity.
  const Bytes usable = capacity_ > others_ ? capacity_ - others_ : 0;
  if (allocated_ > usable || bytes > usable - allocated_)
    throw std::runtime_error(
        fmt::format("Simulated out of memory. Tried to allocate {}. {} has a "
                    "total capacity of {} of "
                    "which {} is free.",
                    format_bytes(bytes), device_name_, format_bytes(capacity_),
                    format_bytes(stats().free)));
  allocated_ += bytes;
  cached_ -= std::min(cached_, bytes);  // cached blocks are reused first
  cached_ = std::min(cached_, capacity_ - allocated_);
  peak_ = std::max(peak_, allocated_);
}

void SimulatedBackend::release(Bytes bytes, bool keep_cached) {
  bytes = std::min(bytes, allocated_);
  allocated_ -= bytes;
  if (keep_cached) cached_ += bytes;
}

SimulatedComponent::SimulatedComponent(std::string name, Bytes bytes,
                                       double reload_cost)
    : name_(std::move(name)), bytes_(bytes), reload_cost_(reload_cost) {}

double SimulatedComponent::reload_cost() const {
  return reload_cost_ >= 0 ? reload_cost_ : double(bytes_);
}

void SimulatedComponent::load(Backend& backend) {
  if (residency_ == Residency::device) return;
  auto* simulated = dynamic_cast<SimulatedBackend*>(&backend);
  if (!simulated)
    throw InvalidArgument("SimulatedComponent '" + name_ +
                          "' loads only onto a SimulatedBackend");
  simulated->allocate(bytes_);
  on_ = simulated;
  residency_ = Residency::device;
}

void SimulatedComponent::park() {
  if (residency_ == Residency::device && on_)
    on_->release(bytes_, /*keep_cached=*/true);
  on_ = nullptr;
  if (residency_ == Residency::device) residency_ = Residency::parked;
}

void SimulatedComponent::unload() {
  park();
  residency_ = Residency::unloaded;
}

}  // namespace mold
