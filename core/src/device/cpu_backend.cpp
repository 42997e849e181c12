#include "mold/device/cpu_backend.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "mold/base/free_heap.hpp"
#include "mold/base/torch_compat.hpp"

namespace mold {

namespace {

// c10 expects 64-byte aligned CPU memory. Each block starts with a header of
// that size holding the block's size and allocation scope, so the deleter
// needs nothing but the data pointer: oneDNN's raw_allocate requires DataPtr
// data == context and a raw_deleter().
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHeader = kAlignment;
constexpr Bytes kNoLimit = std::numeric_limits<Bytes>::max();
/// Blocks from this size on are backed by transparent huge pages where the
/// kernel offers them (madvise mode): a first touch then faults in 2 MiB at a
/// time instead of 4 KiB, which is most of the cost of filling a fresh tensor
/// (loading a 1 GiB checkpoint took 262144 faults).
constexpr std::size_t kHugePageBlock = std::size_t(4) << 20;
constexpr std::uintptr_t kHugePage = std::uintptr_t(2) << 20;

/// Asks for huge pages over the whole 2 MiB pages inside [block, block + n).
void advise_huge_pages(void* block, std::size_t n) {
  if (n < kHugePageBlock) return;
  const auto start = reinterpret_cast<std::uintptr_t>(block);
  const std::uintptr_t first = (start + kHugePage - 1) / kHugePage * kHugePage;
  const std::uintptr_t last = (start + n) / kHugePage * kHugePage;
  if (last > first)
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

struct Counters {
  std::atomic<Bytes> live{0};
  /// Live bytes per allocation scope; the scope a block was allocated in is
  /// kept in its header, so its deleter gives them back to that scope.
  std::atomic<Bytes> live_by_scope[kMaxAllocationScopes] = {};
  std::atomic<std::uint32_t> scope{0};
  std::atomic<Bytes> peak{0};
  std::atomic<Bytes> limit{kNoLimit};
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> fail_at{0};
  std::atomic<bool> fail_after{false};
};

Counters& counters() {
  static Counters* c = new Counters;  // outlives every tensor, even static ones
  return *c;
}

Bytes host_total_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  Bytes kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * kKiB;
  return 0;
}

Bytes host_available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  Bytes kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * kKiB;
  return 0;
}

[[noreturn]] void throw_oom(Bytes requested, Bytes limit, Bytes live,
                            bool injected) {
  const Bytes free = limit > live ? limit - live : 0;
  std::string message = fmt::format(
      "CPU out of memory. Tried to allocate {}. Limit {}, of which {} is free.",
      format_bytes(requested), format_bytes(limit), format_bytes(free));
  if (injected) message += " (injected fault)";
  TORCH_CHECK_WITH(OutOfMemoryError, false, message);
  std::abort();  // unreachable: TORCH_CHECK_WITH throws
}

void tracking_delete(void* data) {
  if (!data) return;
  auto* block = static_cast<char*>(data) - kHeader;
  Bytes size = 0;
  std::uint32_t scope = 0;
  std::memcpy(&size, block, sizeof(size));
  std::memcpy(&scope, block + sizeof(size), sizeof(scope));
  auto& c = counters();
  c.live.fetch_sub(size, std::memory_order_relaxed);
  c.live_by_scope[scope].fetch_sub(size, std::memory_order_relaxed);
  std::free(block);
}

class TrackingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) MOLD_TORCH_ALLOCATOR_CONST override {
    auto& c = counters();
    const std::uint64_t index = c.allocations.fetch_add(1) + 1;
    const std::uint64_t fail_at = c.fail_at.load();
    const Bytes limit = c.limit.load();
    const bool fail_after = c.fail_after.load();
    if (fail_at != 0 && (index == fail_at || (fail_after && index > fail_at))) {
      if (!fail_after) c.fail_at.store(0);
      throw_oom(n, limit == kNoLimit ? host_total_memory() : limit,
                c.live.load(), true);
    }
    const Bytes live = c.live.fetch_add(n) + n;
    if (limit != kNoLimit && live > limit) {
      c.live.fetch_sub(n);
      throw_oom(n, limit, live - n, false);
    }
    void* block = nullptr;
    if (posix_memalign(&block, kAlignment, n + kHeader) != 0 ||
        block == nullptr) {
      c.live.fetch_sub(n);
      throw_oom(n, host_total_memory(), live - n, false);
    }
    advise_huge_pages(block, n + kHeader);
    const Bytes size = n;
    const std::uint32_t scope = c.scope.load(std::memory_order_relaxed);
    std::memcpy(block, &size, sizeof(size));
    std::memcpy(static_cast<char*>(block) + sizeof(size), &scope,
                sizeof(scope));
    c.live_by_scope[scope].fetch_add(size, std::memory_order_relaxed);
    Bytes peak = c.peak.load();
    while (live > peak && !c.peak.compare_exchange_weak(peak, live)) {
    }
    void* data = static_cast<char*>(block) + kHeader;
    return {data, data, &tracking_delete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &tracking_delete; }

#if MOLD_TORCH_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif
};

TrackingCpuAllocator& tracking_allocator() {
  static auto* allocator = new TrackingCpuAllocator;
  return *allocator;
}

}  // namespace

CpuBackend::CpuBackend() {
  // Highest priority, so no later registration displaces the tracker.
  c10::SetCPUAllocator(&tracking_allocator(), /*priority=*/255);
}

std::shared_ptr<CpuBackend> CpuBackend::instance() {
  static std::shared_ptr<CpuBackend> backend(new CpuBackend);
  return backend;
}

std::string CpuBackend::device_name() const {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "host CPU";
}

void CpuBackend::empty_cache() { give_back_free_heap(); }

MemoryStats CpuBackend::stats() const {
  auto& c = counters();
  MemoryStats s;
  const Bytes live = c.live.load();
  const Bytes limit = c.limit.load();
  s.allocated = live;
  s.reserved = live;  // no cache of its own (empty_cache trims the C heap)
  s.peak_allocated = c.peak.load();
  s.peak_reserved = s.peak_allocated;
  if (limit != kNoLimit) {
    s.total = limit;
    s.free = limit > live ? limit - live : 0;
  } else {
    s.total = host_total_memory();
    s.free = host_available_memory();
  }
  s.host_rss = read_host_rss();
  return s;
}

std::uint32_t CpuBackend::set_allocation_scope(std::uint32_t scope) {
  return counters().scope.exchange(scope < kMaxAllocationScopes ? scope : 0);
}

std::vector<std::pair<std::uint32_t, Bytes>> CpuBackend::live_bytes_by_scope()
    const {
  std::vector<std::pair<std::uint32_t, Bytes>> out;
  auto& c = counters();
  for (std::uint32_t scope = 0; scope < kMaxAllocationScopes; ++scope)
    if (const Bytes bytes = c.live_by_scope[scope].load(); bytes > 0)
      out.emplace_back(scope, bytes);
  return out;
}

void CpuBackend::reset_peak() { counters().peak.store(counters().live.load()); }

c10::Device CpuBackend::torch_device() const {
  return c10::Device(c10::DeviceType::CPU);
}

void CpuBackend::set_memory_limit(std::optional<Bytes> limit) {
  counters().limit.store(limit ? *limit : kNoLimit);
}

std::optional<Bytes> CpuBackend::memory_limit() const {
  const Bytes limit = counters().limit.load();
  if (limit == kNoLimit) return std::nullopt;
  return limit;
}

void CpuBackend::fail_allocation_at(std::uint64_t n, bool and_after) {
  counters().allocations.store(0);
  counters().fail_after.store(and_after);
  counters().fail_at.store(n);
}

std::uint64_t CpuBackend::allocation_count() const {
  return counters().allocations.load();
}

void CpuBackend::reset_allocation_count() { counters().allocations.store(0); }

}  // namespace mold
