#pragma once
/// The device interface. Backend plugins register implementations; `cpu` is
/// built in.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mold/base/memory_stats.hpp"

namespace c10 {
struct Device;  // declared here so this header stays free of libtorch
}

namespace mold {

/// One compute device and its memory. Names are lower case: "cpu", "cuda",
/// "rocm", "metal". Implementations must be safe to call from any thread.
class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu", "cuda", "rocm", "metal", ...: the key estimators and classifiers
  /// use.
  virtual std::string name() const = 0;
  /// The hardware, as people know it: "NVIDIA H200", "AMD Radeon PRO W7900".
  virtual std::string device_name() const = 0;
  virtual MemoryStats stats() const = 0;
  /// Starts a new peak measurement scope: peaks restart from the current
  /// values.
  virtual void reset_peak() = 0;
  /// Returns cached, unallocated memory to the device.
  virtual void empty_cache() = 0;
  /// Waits for queued work and throws if any of it failed. A failed command is
  /// an error, never silently accepted (incident 2 of docs/incidents.md: a
  /// decode that returned zeros).
  virtual void synchronize_and_check() = 0;
  /// The libtorch device tensors for this backend live on. Callers include
  /// <c10/core/Device.h>.
  virtual c10::Device torch_device() const = 0;

  /// Attribution of live memory to the code that allocated it, where the
  /// backend can tell (cpu: its tracking allocator tags every block with the
  /// scope current when it was allocated). The runtime opens a scope per
  /// phase of each image (and per component load), so that what is still
  /// live images later names the phase that allocated it.
  virtual bool attributes_allocations() const { return false; }
  /// Allocations from now on belong to `scope` (1 to kMaxAllocationScopes - 1;
  /// 0: none), process-wide; returns the scope that was current. Ignored
  /// where allocations are not attributed.
  virtual std::uint32_t set_allocation_scope(std::uint32_t /*scope*/) {
    return 0;
  }
  /// The bytes still live per scope, scopes with none left out (empty where
  /// allocations are not attributed).
  virtual std::vector<std::pair<std::uint32_t, Bytes>> live_bytes_by_scope()
      const {
    return {};
  }
};

/// Scope ids an attributing backend keeps apart; higher ones count as 0.
inline constexpr std::uint32_t kMaxAllocationScopes = 1u << 16;

/// Creates a backend on first use; it throws a mold::Error when the device is
/// absent.
using BackendFactory = std::function<std::shared_ptr<Backend>()>;

}  // namespace mold
