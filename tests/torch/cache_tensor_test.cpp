// The cache with real tensors on the cpu backend: parked holds zero bytes
// (measured), and the incident 3 scenario scaled down under a cpu memory limit.
#include <c10/util/Exception.h>

#include <catch2/catch.hpp>
#include <mold/cache/cache.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/tensor/tensor_component.hpp>

#include "support/aten_for_tests.hpp"
#include "support/test_registry.hpp"

using namespace mold;

namespace {

std::shared_ptr<TensorComponent> weights(const std::string& name, Bytes bytes,
                                         int seed) {
  return std::make_shared<TensorComponent>(
      name, bytes, [bytes, seed](const c10::Device& device) {
        at::manual_seed(seed);
        return std::vector<at::Tensor>{at::randn(
            {int64_t(bytes / 4)}, at::TensorOptions().device(device))};
      });
}

struct LimitGuard {
  std::shared_ptr<CpuBackend> cpu = CpuBackend::instance();
  ~LimitGuard() { cpu->set_memory_limit(std::nullopt); }
};

/// A stand-in for a VAE decode: ~28 MiB of working tensors, then a small
/// output.
at::Tensor decode(const at::Tensor& vae_weights) {
  at::Tensor work = at::ones({7, 1024, 1024});  // 28 MiB
  work.mul_(vae_weights.slice(0, 0, 1));
  return work.sum({1, 2});
}

}  // namespace

TEST_CASE("a parked component holds zero device bytes, measured",
          "[cache][cpu]") {
  auto cpu = CpuBackend::instance();
  auto part = weights("text_encoder", 16 * kMiB, 1);
  ModelCache cache(cpu);
  cache.add(part);
  const Bytes before = cpu->stats().allocated;
  { auto lease = cache.acquire("text_encoder", 0); }
  CHECK(part->residency() == Residency::device);
  CHECK(cpu->stats().allocated == before + 16 * kMiB);
  const at::Tensor first = part->tensors()[0].clone();
  cache.park("text_encoder");
  CHECK(part->residency() == Residency::parked);
  CHECK(cpu->stats().allocated ==
        before + Bytes(first.nbytes()));  // only our clone
  CHECK_THROWS_WITH(part->tensors(),
                    Catch::Contains("'text_encoder' is parked"));
  // It comes back identical (rebuilt from its seed).
  { auto lease = cache.acquire("text_encoder", 0); }
  CHECK(at::equal(part->tensors()[0], first));
  CHECK(cache.entries()[0].loads == 2);
}

TEST_CASE(
    "incident 3 (docs/incidents.md) scaled down: the decode's estimate makes "
    "the cache park the text "
    "encoder",
    "[cache][cpu]") {
  LimitGuard guard;
  auto cpu = guard.cpu;
  const Bytes baseline = cpu->stats().allocated;
  // 100 MiB "card": transformer 48 MiB + text encoder 32 MiB resident, VAE 2
  // MiB.
  cpu->set_memory_limit(baseline + 100 * kMiB);

  for (const bool pass_estimate : {true, false}) {
    INFO((pass_estimate ? "with the decode's estimate"
                        : "with working bytes 0"));
    ModelCache cache(cpu);
    auto transformer = weights("transformer", 48 * kMiB, 1);
    auto text_encoder = weights("text_encoder", 32 * kMiB, 2);
    auto vae = weights("vae", 2 * kMiB, 3);
    for (auto& c : {transformer, text_encoder, vae}) cache.add(c);
    { auto l = cache.acquire("text_encoder", 0); }  // encode the prompt
    { auto l = cache.acquire("transformer", 0); }   // denoise
    const Bytes decode_estimate = 30 * kMiB;

    auto lease = cache.acquire("vae", pass_estimate ? decode_estimate : 0);
    if (pass_estimate) {
      CHECK(text_encoder->residency() ==
            Residency::parked);  // least recently used
      CHECK(transformer->residency() == Residency::device);
      cpu->reset_peak();
      const Bytes live = cpu->stats().allocated;
      const at::Tensor image = decode(vae->tensors()[0]);
      CHECK(image.numel() == 7);
      // The estimate covered what the decode really took.
      CHECK(cpu->stats().peak_allocated - live <= decode_estimate);
    } else {
      CHECK(text_encoder->residency() ==
            Residency::device);  // nothing made room
      try {
        decode(vae->tensors()[0]);
        FAIL("the decode fit without room being made");
      } catch (const c10::Error& e) {
        const auto report = mold::test::real_plugins().classify(
            {e.what_without_backtrace(), "c10::OutOfMemoryError", {}});
        REQUIRE(report);
        CHECK(report->backend == "cpu");
        CHECK(report->requested == 28 * kMiB);
      }
    }
    lease.release();
    for (auto& c : {transformer, text_encoder, vae}) c->unload();
  }
  CHECK(cpu->stats().allocated == baseline);
}
