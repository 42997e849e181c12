// Fault injection at every allocation point (SQLite's way of testing OOM
// handling): an operation under the cpu backend, through the cache and the
// recovery ladder, with allocation k failing for every k the operation makes.
// After each: the ladder recovered with the uninjected result (up to float
// rounding: relative L2 <= 1e-6), or a classified OOM came out; tracked bytes
// are back at the baseline; no lock is held and residency is true.
#include <c10/util/Exception.h>

#include <catch2/catch.hpp>
#include <map>
#include <mold/cache/cache.hpp>
#include <mold/cache/recovery.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/tensor/tensor_component.hpp>

#include "support/aten_for_tests.hpp"
#include "support/test_registry.hpp"

using namespace mold;

namespace {

at::Tensor forward(const std::vector<at::Tensor>& w, const at::Tensor& x) {
  at::Tensor h = at::relu(at::conv2d(x, w[0], w[1], 1, 1));
  return at::conv2d(h, w[2], w[3], 1, 1);
}

/// The same operation one image at a time: the same result, less memory at
/// once.
at::Tensor forward_per_image(const std::vector<at::Tensor>& w,
                             const at::Tensor& x) {
  std::vector<at::Tensor> outs;
  for (int64_t i = 0; i < x.size(0); ++i)
    outs.push_back(forward(w, x.slice(0, i, i + 1)));
  return at::cat(outs, 0);
}

enum class Outcome { recovered, classified_oom };

struct Rig {
  std::shared_ptr<CpuBackend> cpu = CpuBackend::instance();
  std::shared_ptr<TensorComponent> model = std::make_shared<TensorComponent>(
      "decoder", 0, [](const c10::Device& device) {
        at::manual_seed(11);
        auto opts = at::TensorOptions().device(device);
        return std::vector<at::Tensor>{
            at::randn({16, 8, 3, 3}, opts), at::randn({16}, opts),
            at::randn({3, 16, 3, 3}, opts), at::randn({3}, opts)};
      });
  ModelCache cache{cpu};
  RecoveryPolicy policy{mold::test::real_plugins().classifier()};
  at::Tensor input;

  Rig() {
    cache.add(model);
    at::manual_seed(5);
    input = at::randn({2, 8, 32, 32});
  }

  /// Acquire the model, run the ladder; the result (or why there is none).
  Outcome run(at::Tensor& out, std::string& why) {
    try {
      auto lease = cache.acquire("decoder", 0);
      const auto& w = model->tensors();
      auto whole = RecoveryRung{"whole", cpu, std::nullopt,
                                [&] { out = forward(w, input); },
                                [&] { check_output(out, input); }};
      auto per_image = RecoveryRung{"per_image", cpu, std::nullopt,
                                    [&] { out = forward_per_image(w, input); },
                                    [&] { check_output(out, input); }};
      policy.run("decode", {whole, per_image});
      return Outcome::recovered;
    } catch (const RecoveryFailed& e) {
      REQUIRE(e.last_oom());
      why = e.what();
      return Outcome::classified_oom;
    } catch (const c10::Error& e) {  // loading the model itself failed
      const auto report = mold::test::real_plugins().classify(
          {e.what_without_backtrace(), "", {}});
      REQUIRE(report);
      why = report->message;
      return Outcome::classified_oom;
    }
  }
};

}  // namespace

TEST_CASE("fault injection at every allocation point",
          "[cpu][recovery][fault]") {
  Rig rig;
  const Bytes baseline = rig.cpu->stats().allocated;

  // The uninjected run: its result and how many allocations it makes.
  at::Tensor reference;
  std::string why;
  rig.cpu->fail_allocation_at(0);
  REQUIRE(rig.run(reference, why) == Outcome::recovered);
  const std::uint64_t allocations = rig.cpu->allocation_count();
  rig.cache.park("decoder");
  REQUIRE(allocations >= 5);
  const Bytes reference_bytes = Bytes(reference.nbytes());
  CHECK(rig.cpu->stats().allocated == baseline + reference_bytes);

  // recovered / classified OOMs, for single failures and for failing everything
  // from k on
  std::map<bool, int> recovered, classified;
  for (const bool and_after : {false, true}) {
    for (std::uint64_t k = 1; k <= allocations; ++k) {
      INFO((and_after ? "allocations from " : "allocation ")
           << k << " of " << allocations);
      at::Tensor out;
      rig.cpu->fail_allocation_at(k, and_after);
      const Outcome outcome = rig.run(out, why);
      rig.cpu->fail_allocation_at(0);
      if (outcome == Outcome::recovered) {
        ++recovered[and_after];
        // The per-image rung sums in another order: the same result up to float
        // rounding, as exact rungs are held to everywhere (relative L2 <=
        // 1e-6).
        const double relative_l2 = (out - reference).norm().item<double>() /
                                   reference.norm().item<double>();
        INFO("relative L2 " << relative_l2);
        CHECK(relative_l2 <= 1e-6);
      } else {
        ++classified[and_after];
        CHECK_FALSE(why.empty());
      }
      out.reset();
      // The cache is consistent: no lock held, residency true to the bytes.
      for (const auto& e : rig.cache.entries()) CHECK(e.locks == 0);
      const bool resident = rig.model->residency() == Residency::device;
      CHECK(rig.cpu->stats().allocated ==
            baseline + reference_bytes +
                (resident ? rig.model->device_bytes() : 0));
      rig.cache.park("decoder");
      // Nothing leaked.
      CHECK(rig.cpu->stats().allocated == baseline + reference_bytes);
    }
  }
  // A single failure is recovered from, except in loading the model's four
  // weight tensors (the cache reports that, classified); failing everything
  // from k on is never recovered from.
  CHECK(classified[false] == 4);
  CHECK(recovered[false] == int(allocations) - 4);
  CHECK(recovered[true] == 0);
  CHECK(classified[true] == int(allocations));
}
