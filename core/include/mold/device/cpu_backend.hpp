#pragma once
/// The built-in `cpu` backend: host memory measured exactly by a tracking
/// allocator.

#include <cstdint>
#include <memory>
#include <optional>

#include "mold/device/backend.hpp"

namespace mold {

/// The process-wide cpu backend. Creating it installs a tracking allocator as
/// libtorch's CPU allocator (c10::SetCPUAllocator), so every CPU tensor
/// allocated afterwards is counted: live bytes and peak (reset per scope with
/// reset_peak()). With a memory limit, an allocation that would exceed it
/// throws c10::OutOfMemoryError with the text
///
///     CPU out of memory. Tried to allocate X. Limit L, of which F is free.
///
/// which the core's cpu classifier recognises.
/// The smallest cpu memory limit accepted (--cpu-memory-limit, [backends.cpu]
/// memory_limit): below it not even a tiny model's first tensor fits, so a
/// smaller value is a typo ("1" for "1 GiB"), refused rather than obeyed.
inline constexpr Bytes kMinCpuMemoryLimit = kMiB;

class CpuBackend final : public Backend {
 public:
  /// The single instance (installing the allocator on first call).
  static std::shared_ptr<CpuBackend> instance();

  std::string name() const override { return "cpu"; }
  std::string device_name() const override;
  MemoryStats stats() const override;
  void reset_peak() override;
  /// Gives the C library's free heap pages back to the system
  /// (malloc_trim): a freed tensor below glibc's mmap threshold, which
  /// rises to 32 MiB as large blocks are freed, stays in the process's
  /// heap otherwise, and a parked component's weights would stay in its RSS.
  void empty_cache() override;
  void synchronize_and_check() override {}
  c10::Device torch_device() const override;
  bool attributes_allocations() const override { return true; }
  std::uint32_t set_allocation_scope(std::uint32_t scope) override;
  std::vector<std::pair<std::uint32_t, Bytes>> live_bytes_by_scope()
      const override;

  /// Caps live tensor bytes; nullopt removes the cap.
  void set_memory_limit(std::optional<Bytes> limit);
  std::optional<Bytes> memory_limit() const;
  /// Fault injection: the `n`-th allocation from now (1 = the next) fails as an
  /// OOM (with `and_after`, every allocation from the n-th on); 0 disarms. The
  /// allocation count restarts at each call.
  void fail_allocation_at(std::uint64_t n, bool and_after = false);
  /// Allocations counted since fail_allocation_at() or
  /// reset_allocation_count().
  std::uint64_t allocation_count() const;
  void reset_allocation_count();

 private:
  CpuBackend();
};

}  // namespace mold
