#include "mold/cache/cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include "mold/base/text.hpp"

namespace mold {

// Named rather than anonymous: ModelCache::State holds Entry, and a type with
// internal linkage inside it is an ODR hazard (-Wsubobject-linkage in unity
// builds).
namespace cache_detail {

struct Entry {
  std::shared_ptr<CachedComponent> component;
  int locks = 0;
  std::uint64_t last_use = 0;
  double priority = 0;  // GreedyDual-Size H
  std::uint64_t loads = 0;
  double load_seconds = 0;                // its last load's
  std::optional<Bytes> released_on_park;  // measured at its last park
};

// Parks `e`, measuring how far the backend's allocated bytes fell: what the
// component really gave back, not what it says it holds.
void park_measured(Entry& e, Backend& backend) {
  const Bytes before = backend.stats().allocated;
  e.component->park();
  const Bytes after = backend.stats().allocated;
  e.released_on_park = before > after ? before - after : 0;
}

}  // namespace cache_detail

using cache_detail::Entry;
using cache_detail::park_measured;

std::string_view to_string(Residency residency) {
  switch (residency) {
  case Residency::device:
    return "device";
  case Residency::parked:
    return "parked";
  case Residency::unloaded:
    return "unloaded";
  }
  return "unknown";
}

std::string_view to_string(EvictionPolicy policy) {
  switch (policy) {
  case EvictionPolicy::lru:
    return "lru";
  case EvictionPolicy::smallest_first:
    return "smallest_first";
  case EvictionPolicy::greedy_dual_size:
    return "greedy_dual_size";
  }
  return "unknown";
}

EvictionPolicy parse_eviction_policy(std::string_view text) {
  for (auto p : {EvictionPolicy::lru, EvictionPolicy::smallest_first,
                 EvictionPolicy::greedy_dual_size})
    if (to_string(p) == text) return p;
  throw ParseError(
      fmt::format("unknown eviction policy '{}': use lru, smallest_first or "
                  "greedy_dual_size",
                  text));
}

namespace {

std::string insufficient_text(const std::string& operation, Bytes needed,
                              Bytes free, Bytes evictable,
                              const std::vector<std::string>& locked,
                              Bytes device_most) {
  std::string text = fmt::format(
      "not enough device memory for {}: it needs {}, {} is free and parking "
      "every unlocked model would free {} more{}. ",
      operation, format_bytes(needed), format_bytes(free),
      format_bytes(evictable),
      locked.empty() ? ""
                     : fmt::format(" ({} in use: {})",
                                   locked.size() == 1 ? "one is" : "some are",
                                   join_names(locked)));
  if (device_most > 0 && needed > device_most)
    return text + fmt::format(
                      "It will never fit on this device: {} is the most it "
                      "could give with every model parked and every other "
                      "process gone (short by {}). Lower the resolution or "
                      "the batch, or use a smaller model variant; retrying "
                      "will not help",
                      format_bytes(device_most),
                      format_bytes(needed - device_most));
  if (device_most > 0)
    return text + fmt::format(
                      "It does not fit now: the device could give it {} "
                      "with {} released. Retry when other processes or "
                      "models free their memory, or lower the resolution or "
                      "the batch",
                      format_bytes(device_most),
                      locked.empty() ? "the memory other processes hold"
                                     : "the models in use");
  return text + fmt::format(
                    "Lower the resolution or the batch, use a smaller model "
                    "variant, or release {}",
                    locked.empty() ? "memory held outside the cache"
                                   : "the models in use");
}

}  // namespace

InsufficientMemory::InsufficientMemory(std::string operation, Bytes needed,
                                       Bytes free, Bytes evictable,
                                       std::vector<std::string> locked,
                                       Bytes device_most)
    : Error(insufficient_text(operation, needed, free, evictable, locked,
                              device_most)),
      needed_(needed),
      free_(free),
      evictable_(evictable),
      locked_(std::move(locked)),
      device_most_(device_most) {}

struct ModelCache::State {
  std::shared_ptr<Backend> backend;
  CacheOptions options;
  mutable std::mutex mutex;
  std::vector<Entry> entries;
  std::uint64_t clock = 0;
  double inflation = 0;  // GreedyDual-Size L

  Entry* find(const std::string& name) {
    for (auto& e : entries)
      if (e.component->name() == name) return &e;
    return nullptr;
  }

  Bytes available() const {
    const MemoryStats s = backend->stats();
    return s.free + s.reserved_unallocated();
  }

  // The most the device could give one operation: its total less what this
  // process holds outside the cache's resident components.
  Bytes device_most() const {
    const MemoryStats s = backend->stats();
    Bytes resident = 0;
    for (const auto& e : entries)
      if (e.component->residency() == Residency::device)
        resident += e.component->device_bytes();
    const Bytes held = s.allocated > resident ? s.allocated - resident : 0;
    return s.total > held ? s.total - held : 0;
  }

  void touch(Entry& e) {
    e.last_use = ++clock;
    const double size =
        std::max<double>(1.0, double(e.component->device_bytes()));
    e.priority = inflation + e.component->reload_cost() / size;
  }

  // Parks unlocked resident components in policy order until `needed` is
  // available.
  void make_room(Bytes needed, const Entry* keep,
                 const std::string& operation) {
    Bytes available_now = available();
    if (available_now >= needed) return;
    std::vector<Entry*> candidates;
    std::vector<std::string> locked;
    Bytes evictable = 0;
    for (auto& e : entries) {
      if (e.component->residency() != Residency::device || &e == keep) continue;
      if (e.locks > 0) {
        locked.push_back(e.component->name());
        continue;
      }
      candidates.push_back(&e);
      evictable += e.component->device_bytes();
    }
    // The allocator may hold unused memory until asked: ask before judging.
    backend->empty_cache();
    available_now = available();
    if (available_now >= needed) return;
    if (available_now + evictable < needed)
      throw InsufficientMemory(operation, needed, available_now, evictable,
                               locked, device_most());
    auto order = [&](const Entry* a, const Entry* b) {
      switch (options.policy) {
      case EvictionPolicy::lru:
        return a->last_use < b->last_use;
      case EvictionPolicy::smallest_first:
        return a->component->device_bytes() < b->component->device_bytes();
      case EvictionPolicy::greedy_dual_size:
        return a->priority < b->priority;
      }
      return false;
    };
    std::stable_sort(candidates.begin(), candidates.end(), order);
    for (Entry* e : candidates) {
      park_measured(*e, *backend);
      if (options.policy == EvictionPolicy::greedy_dual_size)
        inflation = std::max(inflation, e->priority);
      backend->empty_cache();
      available_now = available();
      if (available_now >= needed) return;
    }
    // Parking freed less than the components declared.
    throw InsufficientMemory(operation, needed, available_now, 0, locked,
                             device_most());
  }

  void unlock(const std::shared_ptr<CachedComponent>& component) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& e : entries)
      if (e.component == component && e.locks > 0) --e.locks;
  }
};

ModelCache::ModelCache(std::shared_ptr<Backend> backend, CacheOptions options)
    : state_(std::make_shared<State>()) {
  if (!backend) throw InvalidArgument("ModelCache needs a backend");
  state_->backend = std::move(backend);
  state_->options = options;
}

ModelCache::~ModelCache() = default;

void ModelCache::add(std::shared_ptr<CachedComponent> component) {
  if (!component) throw InvalidArgument("ModelCache::add: null component");
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->find(component->name()))
    throw InvalidArgument("the cache already has a component named '" +
                          component->name() + "'");
  Entry entry;
  entry.component = std::move(component);
  state_->entries.push_back(std::move(entry));
  if (state_->entries.back().component->residency() == Residency::device)
    state_->touch(state_->entries.back());
}

ModelCache::Lease ModelCache::acquire(const std::string& name,
                                      Bytes working_bytes) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Entry* entry = state_->find(name);
  if (!entry) {
    std::vector<std::string> names;
    for (const auto& e : state_->entries) names.push_back(e.component->name());
    throw NotFound(fmt::format("the cache has no component '{}'; it has: {}",
                               name,
                               names.empty() ? "(none)" : join_names(names)));
  }
  const Bytes working =
      std::max(working_bytes, state_->options.working_memory_floor);
  const bool resident = entry->component->residency() == Residency::device;
  const Bytes needed =
      working + (resident ? 0 : entry->component->device_bytes());
  ++entry->locks;  // never park the component being acquired
  try {
    state_->make_room(needed, entry,
                      fmt::format("'{}' and {} of working memory", name,
                                  format_bytes(working)));
    if (!resident) {
      const auto started = std::chrono::steady_clock::now();
      entry->component->load(*state_->backend);
      entry->load_seconds = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - started)
                                .count();
      ++entry->loads;
    }
  } catch (...) {
    --entry->locks;
    throw;
  }
  state_->touch(*entry);
  Lease lease;
  lease.state_ = state_;
  lease.component_ = entry->component;
  lease.working_bytes_ = working;
  return lease;
}

ModelCache::Lease ModelCache::reserve(Bytes working_bytes) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const Bytes working =
      std::max(working_bytes, state_->options.working_memory_floor);
  state_->make_room(working, nullptr,
                    fmt::format("{} of working memory", format_bytes(working)));
  Lease lease;
  lease.state_ = state_;
  lease.working_bytes_ = working;
  return lease;
}

void ModelCache::park(const std::string& name) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Entry* entry = state_->find(name);
  if (!entry) throw NotFound("the cache has no component '" + name + "'");
  if (entry->locks > 0)
    throw InvalidArgument("'" + name +
                          "' is in use (locked): release its lease first");
  park_measured(*entry, *state_->backend);
  state_->backend->empty_cache();
}

std::vector<CacheEntryState> ModelCache::entries() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::vector<CacheEntryState> out;
  for (const auto& e : state_->entries)
    out.push_back({e.component->name(), e.component->device_bytes(),
                   e.component->residency(), e.locks, e.last_use, e.priority,
                   e.loads, e.load_seconds, e.released_on_park});
  return out;
}

const CacheOptions& ModelCache::options() const { return state_->options; }
Backend& ModelCache::backend() const { return *state_->backend; }
const std::shared_ptr<Backend>& ModelCache::shared_backend() const {
  return state_->backend;
}
Bytes ModelCache::available() const { return state_->available(); }

ModelCache::Lease::Lease(Lease&& other) noexcept
    : state_(std::move(other.state_)),
      component_(std::move(other.component_)),
      working_bytes_(other.working_bytes_) {}

ModelCache::Lease& ModelCache::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
    component_ = std::move(other.component_);
    working_bytes_ = other.working_bytes_;
  }
  return *this;
}

ModelCache::Lease::~Lease() { release(); }

void ModelCache::Lease::release() {
  if (state_ && component_) state_->unlock(component_);
  state_.reset();
  component_.reset();
}

}  // namespace mold
