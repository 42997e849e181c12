// The recovery ladder with injected operations.
#include <c10/core/Device.h>

#include <catch2/catch.hpp>
#include <mold/cache/recovery.hpp>
#include <mold/cache/simulated_backend.hpp>
#include <stdexcept>

#include "support/test_registry.hpp"

using namespace mold;

namespace {

const char* kCudaOom =
    "CUDA out of memory. Tried to allocate 5.01 GiB. GPU 0 has a total "
    "capacity of 23.99 GiB "
    "of which 3.69 GiB is free.";

/// A device whose clean-up can be made to fail, counting what the ladder asks
/// of it.
class ScriptedBackend final : public Backend {
 public:
  Bytes free_bytes = 8 * kGiB;
  bool cleanup_throws = false;
  int empty_cache_calls = 0;
  int synchronize_calls = 0;

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return "Scripted GPU"; }
  MemoryStats stats() const override {
    MemoryStats s;
    s.total = 24 * kGiB;
    s.free = free_bytes;
    return s;
  }
  void reset_peak() override {}
  void empty_cache() override {
    ++empty_cache_calls;
    // An OOM while cleaning up (incident 2, docs/incidents.md) must not stop
    // the fallback.
    if (cleanup_throws)
      throw std::runtime_error("CUDA error: out of memory (in empty_cache)");
  }
  void synchronize_and_check() override { ++synchronize_calls; }
  c10::Device torch_device() const override { return c10::Device(c10::kCPU); }
};

RecoveryRung rung(const std::string& name, std::shared_ptr<Backend> backend,
                  std::function<void()> run,
                  std::optional<Bytes> working = std::nullopt) {
  return RecoveryRung{name, std::move(backend), working, std::move(run), {}};
}
}  // namespace

TEST_CASE("a recognised OOM moves to the next rung after cleaning up",
          "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  std::string ran;
  const auto result = policy.run(
      "decode", {rung("whole", gpu,
                      [&] {
                        ran += "whole,";
                        throw std::runtime_error(kCudaOom);
                      }),
                 rung("tiles_64", gpu, [&] { ran += "tiles_64,"; })});
  CHECK(ran == "whole,tiles_64,");
  CHECK(result.rung == "tiles_64");
  REQUIRE(result.attempts.size() == 2);
  CHECK(result.attempts[0].outcome == RecoveryAttempt::Outcome::out_of_memory);
  REQUIRE(result.attempts[0].oom);
  CHECK(result.attempts[0].oom->backend == "cuda");
  CHECK(result.attempts[0].oom->requested == parse_bytes("5.01 GiB"));
  CHECK(result.attempts[1].outcome == RecoveryAttempt::Outcome::succeeded);
  CHECK(gpu->empty_cache_calls == 1);
  CHECK(gpu->synchronize_calls ==
        2);  // after the cleanup, and to complete tiles_64
}

TEST_CASE("an OOM during cleanup is recorded and cannot stop the fallback",
          "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  gpu->cleanup_throws = true;
  auto cpu = std::make_shared<SimulatedBackend>("host", 64 * kGiB);
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  bool cpu_ran = false;
  const auto result = policy.run(
      "decode",
      {rung("whole", gpu, [] { throw std::runtime_error(kCudaOom); }),
       rung("tiles_16", gpu, [] { throw std::runtime_error(kCudaOom); }),
       rung("cpu", cpu, [&] { cpu_ran = true; })});
  CHECK(cpu_ran);
  CHECK(result.rung == "cpu");
  CHECK_THAT(result.attempts[0].cleanup_error,
             Catch::Contains("in empty_cache"));
  CHECK_THAT(result.attempts[1].cleanup_error,
             Catch::Contains("in empty_cache"));
}

TEST_CASE("an unrelated error propagates at once, unchanged", "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  bool second_ran = false;
  struct Custom : std::logic_error {
    using std::logic_error::logic_error;
  };
  try {
    policy.run(
        "decode",
        {rung("whole", gpu,
              [] {
                throw Custom(
                    "CUDA error: an illegal memory access was encountered");
              }),
         rung("tiles_64", gpu, [&] { second_ran = true; })});
    FAIL("no exception");
  } catch (const Custom& e) {
    CHECK(std::string(e.what()) ==
          "CUDA error: an illegal memory access was encountered");
  }
  CHECK_FALSE(second_ran);
  CHECK(gpu->empty_cache_calls == 0);
}

TEST_CASE("a rung whose estimate cannot fit is skipped without being tried",
          "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  gpu->free_bytes = 2 * kGiB;
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  bool whole_ran = false;
  const auto result = policy.run(
      "decode", {rung(
                     "whole", gpu, [&] { whole_ran = true; }, 22 * kGiB),
                 rung(
                     "tiles_64", gpu, [] {}, 1 * kGiB)});
  CHECK_FALSE(whole_ran);
  CHECK(result.rung == "tiles_64");
  CHECK(result.attempts[0].outcome == RecoveryAttempt::Outcome::skipped);
  CHECK_THAT(result.attempts[0].error,
             Catch::Contains("needs ~22.00 GiB, 2.00 GiB is available"));
}

TEST_CASE("an invalid output is a failed attempt, never a result",
          "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  int produced = 0;
  RecoveryRung silent = rung("whole", gpu, [&] { produced = 0; });
  silent.validate = [&] {
    if (produced == 0) throw InvalidOutput("silent zero output: all zeros");
  };
  RecoveryRung tiles = rung("tiles_64", gpu, [&] { produced = 42; });
  tiles.validate = silent.validate;
  const auto result = policy.run("decode", {silent, tiles});
  CHECK(produced == 42);
  CHECK(result.rung == "tiles_64");
  CHECK(result.attempts[0].outcome == RecoveryAttempt::Outcome::invalid_output);
  CHECK_THAT(result.attempts[0].error, Catch::Contains("silent zero output"));
}

TEST_CASE("when every rung fails, the attempts and the last OOM come out",
          "[recovery]") {
  auto gpu = std::make_shared<ScriptedBackend>();
  gpu->free_bytes = kGiB;
  RecoveryPolicy policy(mold::test::real_plugins().classifier());
  try {
    policy.run("decode", {rung(
                              "whole", gpu, [] {}, 10 * kGiB),
                          rung("tiles_64", gpu,
                               [] { throw std::runtime_error(kCudaOom); })});
    FAIL("no RecoveryFailed");
  } catch (const RecoveryFailed& e) {
    REQUIRE(e.attempts().size() == 2);
    REQUIRE(e.last_oom());
    CHECK(e.last_oom()->backend == "cuda");
    CHECK_THAT(e.what(), Catch::Contains("whole: skipped") &&
                             Catch::Contains("tiles_64: out_of_memory"));
  }
  CHECK_THROWS_AS(policy.run("decode", {}), InvalidArgument);
}
