// The cpu backend's tracking allocator measures real libtorch work exactly.
#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <catch2/catch.hpp>
#include <mold/device/cpu_backend.hpp>

#include "support/aten_for_tests.hpp"
#include "support/test_registry.hpp"

using namespace mold;

namespace {
/// Restores the backend's limit and fault injection after a test.
struct CpuBackendGuard {
  std::shared_ptr<CpuBackend> cpu = CpuBackend::instance();
  ~CpuBackendGuard() {
    cpu->set_memory_limit(std::nullopt);
    cpu->fail_allocation_at(0);
  }
};
}  // namespace

TEST_CASE("live bytes and peaks of real tensors are counted exactly", "[cpu]") {
  CpuBackendGuard g;
  CHECK(g.cpu->name() == "cpu");
  CHECK(g.cpu->torch_device() == c10::Device(c10::kCPU));
  const Bytes before = g.cpu->stats().allocated;
  g.cpu->reset_peak();
  {
    at::Tensor a = at::empty({1024, 1024}, at::kFloat);  // 4 MiB
    CHECK(g.cpu->stats().allocated == before + 4 * kMiB);
    {
      at::Tensor b = at::empty({256, 1024}, at::kDouble);  // 2 MiB
      CHECK(g.cpu->stats().allocated == before + 6 * kMiB);
    }
    CHECK(g.cpu->stats().allocated == before + 4 * kMiB);
    CHECK(g.cpu->stats().peak_allocated == before + 6 * kMiB);
    g.cpu->reset_peak();
    CHECK(g.cpu->stats().peak_allocated == before + 4 * kMiB);
  }
  CHECK(g.cpu->stats().allocated == before);
  CHECK(g.cpu->stats().host_rss > 0);
  CHECK(g.cpu->stats().total > 0);
}

TEST_CASE("oneDNN convolutions (raw_allocate) are tracked and released",
          "[cpu]") {
  CpuBackendGuard g;
  const Bytes before = g.cpu->stats().allocated;
  g.cpu->reset_peak();
  {
    at::Tensor x = at::randn({1, 32, 96, 96});
    at::Tensor w = at::randn({64, 32, 3, 3});
    at::Tensor y = at::conv2d(x, w, {}, 1, 1);
    CHECK(y.sizes() == at::IntArrayRef({1, 64, 96, 96}));
    CHECK(g.cpu->stats().peak_allocated >=
          before + Bytes(y.nbytes() + x.nbytes()));
  }
  CHECK(g.cpu->stats().allocated == before);
}

TEST_CASE("the memory limit raises a classified OOM in the documented format",
          "[cpu]") {
  CpuBackendGuard g;
  const Bytes live = g.cpu->stats().allocated;
  g.cpu->set_memory_limit(live + 8 * kMiB);
  CHECK(g.cpu->stats().total == live + 8 * kMiB);
  at::Tensor small = at::empty({1024, 1024}, at::kFloat);  // 4 MiB fits
  try {
    at::Tensor big =
        at::empty({2048, 1024}, at::kFloat);  // 8 MiB more does not
    FAIL("no OOM");
  } catch (const c10::OutOfMemoryError& e) {
    const std::string text = e.what_without_backtrace();
    CHECK_THAT(text,
               Catch::StartsWith(
                   "CPU out of memory. Tried to allocate 8.00 MiB. Limit "));
    const auto report = mold::test::real_plugins().classify(
        {text, "c10::OutOfMemoryError", {}});
    REQUIRE(report);
    CHECK(report->backend == "cpu");
    CHECK(report->requested == 8 * kMiB);
    CHECK(report->capacity == live + 8 * kMiB);
  }
  CHECK(g.cpu->stats().allocated ==
        live + 4 * kMiB);  // the failed one left nothing
}

TEST_CASE("fault injection fails exactly the n-th allocation", "[cpu]") {
  CpuBackendGuard g;
  const Bytes before = g.cpu->stats().allocated;
  g.cpu->fail_allocation_at(3);
  at::Tensor a = at::empty({16});
  at::Tensor b = at::empty({16});
  CHECK(g.cpu->allocation_count() == 2);
  CHECK_THROWS_WITH(at::empty({16}), Catch::Contains("(injected fault)"));
  at::Tensor d = at::empty({16});  // disarmed after firing
  CHECK(g.cpu->allocation_count() == 4);
  a.reset();
  b.reset();
  d.reset();
  CHECK(g.cpu->stats().allocated == before);
}
