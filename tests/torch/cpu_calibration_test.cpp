// The cpu constants in the plugins' calibration files against a fresh
// measurement: the published architectures (seeded weights, float32) at
// 128x128, peak bytes counted by the cpu backend's allocator, must be covered
// by the estimate with at most 15% to spare.
#include <catch2/catch.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/vae.hpp>

#include "support/aten_for_tests.hpp"
#include "support/test_registry.hpp"

using namespace mold;

TEST_CASE("cpu VAE estimates cover a fresh measurement within 1.00-1.15",
          "[calibration][vae]") {
  const Registry& registry = mold::test::real_plugins();
  auto cpu = CpuBackend::instance();
  constexpr int kSize = 128;
  for (const std::string family : {"qwen_image", "zimage"}) {
    const auto vae = registry.family(family)->make_vae("default", 0);
    for (const std::string op : {"vae_decode", "vae_encode"}) {
      INFO(family << " " << op);
      const bool decode = op == "vae_decode";
      at::manual_seed(1);
      const at::Tensor input = decode ? at::randn({1, 16, kSize / 8, kSize / 8})
                                      : at::rand({1, 3, kSize, kSize}) * 2 - 1;
      const Bytes live = cpu->stats().allocated;
      cpu->reset_peak();
      {
        const at::Tensor out =
            decode ? vae->decode(input, {}) : vae->encode(input, {});
      }
      const Bytes measured = cpu->stats().peak_allocated - live;

      Workload w;
      w.family = family;
      w.op = op;
      w.backend = "cpu";
      w.dtype = "float32";
      w.width = w.height = kSize;
      const Estimate estimate = registry.estimate(w);
      CHECK(estimate.calibrated);
      const double ratio = double(estimate.bytes) / double(measured);
      INFO("estimate " << estimate.bytes << " measured " << measured
                       << " ratio " << ratio);
      CHECK(ratio >= 1.00);
      CHECK(ratio <= 1.15);
    }
  }
}
