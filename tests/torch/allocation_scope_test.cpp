// Allocation scopes on the cpu backend: each block counted under the scope
// current when it was allocated, given back to it when freed; and a full
// table reusing only scopes none of whose bytes is live.

#include <catch2/catch.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/runtime/allocation_scope.hpp>

#include "support/aten_for_tests.hpp"

using namespace mold;

namespace {

Bytes live_in(const Backend& backend, std::uint32_t scope) {
  for (const auto& [id, bytes] : backend.live_bytes_by_scope())
    if (id == scope) return bytes;
  return 0;
}

}  // namespace

TEST_CASE("the cpu backend counts live bytes per allocation scope",
          "[scopes]") {
  auto cpu = CpuBackend::instance();
  REQUIRE(cpu->attributes_allocations());
  const std::uint32_t a =
      AllocationScopes::open(*cpu, {7, "denoise", "t", ScopeKind::phase});
  at::Tensor kept = at::ones({1024}, at::kFloat);  // 4 KiB in scope a
  const std::uint32_t b =
      AllocationScopes::open(*cpu, {7, "vae_decode", "v", ScopeKind::phase});
  REQUIRE(a != b);
  {
    const at::Tensor temporary = at::ones({2048}, at::kFloat);
    CHECK(live_in(*cpu, b) >= 8192);
  }
  CHECK(live_in(*cpu, b) == 0);  // freed: given back to its own scope
  CHECK(live_in(*cpu, a) == 4096);
  const auto described = AllocationScopes::describe(a);
  REQUIRE(described);
  CHECK(described->image == 7);
  CHECK(described->phase == "denoise");
  bool found = false;
  for (const auto& r : AllocationScopes::residue(*cpu))
    if (r.scope && r.scope->phase == "denoise" && r.scope->image == 7)
      found = r.bytes == 4096;
  CHECK(found);
  kept = at::Tensor();
  CHECK(live_in(*cpu, a) == 0);
  AllocationScopes::close(*cpu);
  CHECK_FALSE(AllocationScopes::describe(0));
}

TEST_CASE("a full scope table reuses only scopes with nothing live",
          "[scopes]") {
  auto cpu = CpuBackend::instance();
  const std::uint32_t holder =
      AllocationScopes::open(*cpu, {1, "text_encode", "te", ScopeKind::phase});
  const at::Tensor kept = at::ones({256}, at::kFloat);
  AllocationScopes::close(*cpu);
  // Fill the table, then open as many again: every id handed out must be
  // one with no live bytes, never the holder's.
  for (std::uint32_t i = 0; i + 1 < kMaxAllocationScopes; ++i)
    AllocationScopes::open(*cpu, {2, "filler", "", ScopeKind::phase});
  for (int i = 0; i < 200; ++i) {
    const std::uint32_t id =
        AllocationScopes::open(*cpu, {3, "again", "", ScopeKind::phase});
    REQUIRE(id != 0);
    REQUIRE(id != holder);
  }
  AllocationScopes::close(*cpu);
  const auto described = AllocationScopes::describe(holder);
  REQUIRE(described);
  CHECK(described->phase == "text_encode");  // still what allocated `kept`
  CHECK(live_in(*cpu, holder) == 1024);
}
