// The model cache's bookkeeping on a simulated device: policies, locks, the
// floor, and refusing before anything runs.
#include <catch2/catch.hpp>
#include <map>
#include <mold/cache/cache.hpp>
#include <mold/cache/simulated_backend.hpp>
#include <optional>

using namespace mold;

namespace {

struct Rig {
  std::shared_ptr<SimulatedBackend> gpu;
  ModelCache cache;
  std::map<std::string, std::shared_ptr<SimulatedComponent>> parts;

  explicit Rig(Bytes capacity, CacheOptions options = {})
      : gpu(std::make_shared<SimulatedBackend>("GPU 0", capacity)),
        cache(gpu, options) {}

  void add(const std::string& name, Bytes bytes, double cost = -1) {
    parts[name] = std::make_shared<SimulatedComponent>(name, bytes, cost);
    cache.add(parts[name]);
  }
  Residency where(const std::string& name) {
    return parts.at(name)->residency();
  }
};

}  // namespace

TEST_CASE("acquire loads, and parks the least recently used to make room",
          "[cache]") {
  Rig rig(100 * kGiB);
  rig.add("transformer", 41 * kGiB);
  rig.add("text_encoder", 17 * kGiB);
  rig.add("vae", 1 * kGiB);
  { auto l = rig.cache.acquire("text_encoder", 0); }
  { auto l = rig.cache.acquire("transformer", 0); }
  CHECK(rig.where("transformer") == Residency::device);
  CHECK(rig.where("text_encoder") == Residency::device);
  // A decode needing 50 GiB: 100 - 58 - 1 = 41 free; the text encoder (least
  // recently used) goes, and that is enough.
  auto lease = rig.cache.acquire("vae", 50 * kGiB);
  CHECK(rig.where("text_encoder") == Residency::parked);
  CHECK(rig.where("transformer") == Residency::device);
  CHECK(rig.cache.available() >= 50 * kGiB);
  CHECK(lease.working_bytes() == 50 * kGiB);
  CHECK(lease.component()->name() == "vae");
}

TEST_CASE("smallest-first and GreedyDual-Size choose differently", "[cache]") {
  for (auto policy :
       {EvictionPolicy::smallest_first, EvictionPolicy::greedy_dual_size}) {
    INFO(to_string(policy));
    Rig rig(60 * kGiB, {policy, 0});
    rig.add("big", 30 * kGiB, /*cost=*/30.0);     // cheap to reload per byte
    rig.add("small", 10 * kGiB, /*cost=*/100.0);  // expensive per byte
    rig.add("medium", 15 * kGiB, /*cost=*/15.0);
    { auto l = rig.cache.acquire("small", 0); }
    { auto l = rig.cache.acquire("big", 0); }
    { auto l = rig.cache.acquire("medium", 0); }
    // 5 GiB free; 12 more needed.
    rig.cache.reserve(12 * kGiB);
    if (policy == EvictionPolicy::smallest_first) {
      CHECK(rig.where("small") == Residency::parked);
      CHECK(rig.where("medium") ==
            Residency::device);  // 5 + 10 = 15 >= 12 after one
    } else {
      // H = cost / size: big and medium 1/GiB, small 10/GiB: big (added first)
      // goes.
      CHECK(rig.where("big") == Residency::parked);
      CHECK(rig.where("small") == Residency::device);
    }
  }
}

TEST_CASE(
    "locked components are never parked; the cache refuses before running",
    "[cache]") {
  Rig rig(48 * kGiB);
  rig.add("transformer", 21 * kGiB);
  rig.add("text_encoder", 16 * kGiB);
  rig.add("vae", 1 * kGiB);
  auto transformer = rig.cache.acquire("transformer", 0);
  { auto l = rig.cache.acquire("text_encoder", 0); }
  try {
    rig.cache.acquire("vae", 40 * kGiB);
    FAIL("no InsufficientMemory");
  } catch (const InsufficientMemory& e) {
    CHECK(e.needed() == 41 * kGiB);
    CHECK(e.free() == 11 * kGiB);
    CHECK(e.evictable() == 16 * kGiB);
    CHECK(e.locked() == std::vector<std::string>{"transformer"});
    CHECK_THAT(e.what(), Catch::Contains("needs 41.00 GiB") &&
                             Catch::Contains("11.00 GiB is free") &&
                             Catch::Contains("transformer"));
    // An empty card of 48 GiB holds it: not now, not never.
    CHECK_FALSE(e.never());
    CHECK(e.device_most() == 48 * kGiB);
    CHECK_THAT(e.what(), Catch::Contains("It does not fit now") &&
                             Catch::Contains("the models in use released"));
  }
  try {
    rig.cache.acquire("vae", 50 * kGiB);
    FAIL("no InsufficientMemory");
  } catch (const InsufficientMemory& e) {
    CHECK(e.never());
    CHECK_THAT(e.what(), Catch::Contains("It will never fit on this device") &&
                             Catch::Contains("short by 3.00 GiB") &&
                             Catch::Contains("retrying will not help"));
  }
  // Refused before parking anything: nothing half-done.
  CHECK(rig.where("text_encoder") == Residency::device);
  CHECK(rig.where("vae") == Residency::unloaded);
  for (const auto& e : rig.cache.entries())
    CHECK(e.locks == (e.name == "transformer" ? 1 : 0));
  transformer.release();
  CHECK(rig.cache.entries()[0].locks == 0);
  CHECK_THROWS_WITH(
      rig.cache.acquire("unet", 0),
      Catch::Contains("no component 'unet'") && Catch::Contains("transformer"));
}

TEST_CASE("the working-memory floor is reserved when the estimate is smaller",
          "[cache]") {
  Rig rig(23 * kGiB, {EvictionPolicy::lru, 3 * kGiB});
  rig.add("transformer", 20 * kGiB);
  rig.add("vae", 1 * kGiB);
  { auto l = rig.cache.acquire("transformer", 0); }
  auto lease = rig.cache.acquire("vae", 512 * kMiB);
  CHECK(lease.working_bytes() == 3 * kGiB);
  CHECK(rig.where("transformer") == Residency::parked);  // 23 - 20 < 1 + 3
}

TEST_CASE("memory the allocator caches counts as free after empty_cache",
          "[cache]") {
  Rig rig(10 * kGiB);
  rig.add("a", 4 * kGiB);
  rig.gpu->allocate(5 * kGiB);
  rig.gpu->release(5 * kGiB, /*keep_cached=*/true);  // 5 GiB reserved, unused
  CHECK(rig.gpu->stats().free == 5 * kGiB);
  CHECK(rig.cache.available() == 10 * kGiB);
  auto lease = rig.cache.acquire("a", 5 * kGiB);
  CHECK(rig.where("a") == Residency::device);
}

TEST_CASE("a lease can outlive its cache, and park refuses a locked component",
          "[cache]") {
  std::optional<ModelCache::Lease> lease;
  auto part = std::make_shared<SimulatedComponent>("a", kGiB);
  {
    ModelCache cache(std::make_shared<SimulatedBackend>("GPU 0", 4 * kGiB));
    cache.add(part);
    lease = cache.acquire("a", 0);
    CHECK_THROWS_WITH(cache.park("a"), Catch::Contains("'a' is in use"));
    CHECK_THROWS_AS(cache.add(part), InvalidArgument);
  }
  lease.reset();  // no crash: the lease keeps the cache's state alive
  CHECK(parse_eviction_policy("greedy_dual_size") ==
        EvictionPolicy::greedy_dual_size);
  CHECK_THROWS_WITH(parse_eviction_policy("fifo"), Catch::Contains("'fifo'"));
}
