// The profiler's own cost, side by side: the tiny Z-Image made N images at a
// time through the runtime without an observer, and with the ProfileRecorder
// molddiag leak uses (its samples per phase and per image, the residue per
// allocation scope), then the leak and parity analyses of what it recorded.
// Rounds alternate so that both see the same machine; the ratio of the
// medians is the overhead (target: <= 1.05).
//
//   ./build/bin/profiler_overhead_bench [rounds] [images] [size]
//   (default: 7 rounds of 8 images of 64x64, 2 steps)

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mold/cache/cache.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/parity.hpp>
#include <mold/profile/profile_recorder.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/runner.hpp>
#include <vector>

#include "bench_paths.hpp"
#include "tiny_zimage.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int images = argc > 2 ? std::max(4, std::atoi(argv[2])) : 8;
  const int size = argc > 3 ? std::max(16, std::atoi(argv[3]) / 16 * 16) : 64;

  std::unique_ptr<mold_bench::TinyZImage> model;
  try {
    model = std::make_unique<mold_bench::TinyZImage>(mold_bench::kPluginDir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "profiler_overhead_bench: {}\n", e.what());
    return 1;
  }
  mold::Runner& runner = *model->runner;

  mold::GenerateRequest request;
  request.prompt = "a red fox in the snow";
  request.width = request.height = size;
  request.steps = 2;
  request.batch = images;

  auto timed = [&](bool profiled) {
    const auto start = std::chrono::steady_clock::now();
    if (profiled) {
      mold::ProfileRecorder recorder(mold::MemoryProfile{});
      runner.add_observer(&recorder);
      runner.run(model->pipeline->resolve_request(request), {});
      runner.remove_observer(&recorder);
      const auto leak = mold::analyze_leaks(recorder.profile());
      const auto parity = mold::check_parity(recorder.profile());
      if (leak.verdict == mold::LeakVerdict::leak || !parity.ok)
        fmt::print(stderr, "unexpected: {} / {}\n", leak.summary,
                   parity.summary);
    } else {
      runner.run(model->pipeline->resolve_request(request), {});
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };

  timed(false);  // warm-up: loads the weights, first kernels
  std::vector<double> plain, profiled;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      plain.push_back(timed(false));
      profiled.push_back(timed(true));
    } else {
      profiled.push_back(timed(true));
      plain.push_back(timed(false));
    }
  }
  const double a = median(plain), b = median(profiled);
  fmt::print(
      "tiny Z-Image, {} images of {}x{}, 2 steps, {} rounds alternating\n"
      "  without the profiler: {:.4f} s per round (median)\n"
      "  with the profiler:    {:.4f} s per round (median; recording and "
      "both analyses)\n"
      "  overhead: {:.3f}x (target <= 1.05)\n",
      images, size, size, rounds, a, b, b / a);
  return 0;
}
