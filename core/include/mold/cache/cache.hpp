#pragma once
/// The model cache: which components hold device memory, and making room for an
/// operation before it runs instead of crashing inside it (incident 3 of
/// docs/incidents.md: a cache that never evicted the transformer before a VAE
/// decode because the decode's working memory was never estimated).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/base/error.hpp"
#include "mold/device/backend.hpp"

namespace mold {

/// Where a component's weights are: on the device; parked (no device bytes,
/// kept where they can come back from quickly: host memory, or on the cpu
/// backend the means to rebuild them); unloaded (nothing kept).
enum class Residency { device, parked, unloaded };
std::string_view to_string(Residency residency);

/// A model component the cache moves on and off the device. Implementations:
/// tensors (TensorComponent), simulations (SimulatedComponent). Calls come from
/// the cache, one at a time.
class CachedComponent {
 public:
  virtual ~CachedComponent() = default;
  virtual const std::string& name() const = 0;
  /// Device bytes of its weights when resident.
  virtual Bytes device_bytes() const = 0;
  /// The cost of loading it again, in any unit common to all components
  /// (GreedyDual-Size weighs it against the size). Default: its bytes.
  virtual double reload_cost() const { return double(device_bytes()); }
  virtual Residency residency() const = 0;
  /// Puts its weights on `backend`'s device. On failure it throws and stays
  /// where it was.
  virtual void load(Backend& backend) = 0;
  /// Releases every device byte, keeping what is needed to load again.
  virtual void park() = 0;
  /// Releases everything.
  virtual void unload() = 0;
};

/// Which unlocked resident component to park first.
enum class EvictionPolicy {
  lru,               ///< least recently used
  smallest_first,    ///< smallest first (InvokeAI's model cache)
  greedy_dual_size,  ///< lowest L + reload cost / size (Cao & Irani, 1997)
};
std::string_view to_string(EvictionPolicy policy);
/// "lru", "smallest_first", "greedy_dual_size"; throws ParseError listing them.
EvictionPolicy parse_eviction_policy(std::string_view text);

struct CacheOptions {
  EvictionPolicy policy = EvictionPolicy::lru;
  /// The least working memory reserved for any operation (InvokeAI keeps 3 GB
  /// on GPUs): the larger of this and the operation's estimate is made free.
  Bytes working_memory_floor = 0;
};

/// One component as the cache sees it.
struct CacheEntryState {
  std::string name;
  Bytes bytes = 0;
  Residency residency = Residency::unloaded;
  int locks = 0;
  std::uint64_t last_use = 0;  ///< logical clock of the last acquire; 0 = never
  double priority = 0;         ///< GreedyDual-Size H value
  std::uint64_t loads = 0;     ///< times loaded onto the device
  double load_seconds = 0;     ///< how long its last load took; 0: never loaded
  /// How far the backend's allocated bytes fell when it was last parked (a
  /// component that keeps device buffers while parked gives back less than
  /// `bytes`); none when it was never parked.
  std::optional<Bytes> released_on_park;
};

/// The cache cannot make room: even parking every unlocked component would
/// leave less free than needed. Thrown before anything runs; nothing is
/// half-loaded.
class InsufficientMemory : public Error {
 public:
  /// `device_most`: the most the device could give the operation with
  /// every component parked and every other process gone (its total less
  /// what this process holds outside the cache); 0 when unknown. The
  /// message says whether the operation will never fit (needed above it)
  /// or does not fit now.
  InsufficientMemory(std::string operation, Bytes needed, Bytes free,
                     Bytes evictable, std::vector<std::string> locked,
                     Bytes device_most = 0);
  /// Not even an empty device would hold it (needed > device_most).
  bool never() const { return device_most_ > 0 && needed_ > device_most_; }
  Bytes device_most() const { return device_most_; }
  Bytes needed() const { return needed_; }
  Bytes free() const { return free_; }
  Bytes evictable() const { return evictable_; }
  const std::vector<std::string>& locked() const { return locked_; }

 private:
  Bytes needed_, free_, evictable_;
  std::vector<std::string> locked_;
  Bytes device_most_;
};

class ModelCache {
 public:
  class Lease;

  ModelCache(std::shared_ptr<Backend> backend, CacheOptions options = {});
  ~ModelCache();
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;

  /// Adds a component, in whatever residency it has. Throws InvalidArgument for
  /// a duplicate name.
  void add(std::shared_ptr<CachedComponent> component);

  /// Makes `component` resident and `working_bytes` (at least the floor) free
  /// besides, parking unlocked components in policy order and re-reading the
  /// backend's free memory after each (memory the allocator holds unused counts
  /// as free after empty_cache). The component stays locked (never parked)
  /// while the lease lives. Throws InsufficientMemory before parking anything
  /// when room cannot be made, NotFound for an unknown name, and whatever
  /// loading the component throws (it is then left where it was, unlocked).
  Lease acquire(const std::string& component, Bytes working_bytes);
  /// Makes `working_bytes` (at least the floor) free for an operation that
  /// needs no component of its own.
  Lease reserve(Bytes working_bytes);

  /// Parks an unlocked component now. Throws InvalidArgument when it is locked.
  void park(const std::string& component);

  std::vector<CacheEntryState> entries() const;
  const CacheOptions& options() const;
  Backend& backend() const;
  const std::shared_ptr<Backend>& shared_backend() const;
  /// Free device memory plus what empty_cache() would return.
  Bytes available() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// A hold on a component (and on the room made for an operation). Move-only;
/// releases the component's lock when destroyed. May outlive its cache.
class ModelCache::Lease {
 public:
  Lease() = default;
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  /// Null for a reserve() lease.
  CachedComponent* component() const { return component_.get(); }
  /// The working memory that was made free (the larger of the request and the
  /// floor).
  Bytes working_bytes() const { return working_bytes_; }
  void release();

 private:
  friend class ModelCache;
  std::shared_ptr<ModelCache::State> state_;
  std::shared_ptr<CachedComponent> component_;
  Bytes working_bytes_ = 0;
};

}  // namespace mold
