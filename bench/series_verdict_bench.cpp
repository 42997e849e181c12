// The series verdict's cost against the run's length (docs/profiler.md): a
// saved report of 10^5 or 10^6 images (molddiag report) must be judged in
// seconds. Per length: the change-point search and the whole verdict
// (judge_series) on a planted series (a warm-up ramp, then a leak of 16 KiB
// per image under 4 KiB of noise), timed; and where the direct, quadratic
// fit is still affordable, its time and change-point beside the prefix sums'.
//
//   series_verdict_bench [--max 1000000] [--direct-max 20000]

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mold/profile/series_verdict.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::vector<double> planted_series(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0, 4096);
  std::vector<double> y(n);
  const std::size_t warmup = n / 10;
  for (std::size_t i = 0; i < n; ++i) {
    const double base = i < warmup
                            ? 64.0 * 1024 * 1024 * double(i) / double(warmup)
                            : 64.0 * 1024 * 1024 + 16384.0 * double(i - warmup);
    y[i] = std::round(1e9 + base + noise(random));
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max = 1000000, direct_max = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--max"))
      max = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--direct-max"))
      direct_max = std::strtoull(argv[i + 1], nullptr, 10);
  }
  fmt::print("{:>9} {:>12} {:>12} {:>9} {:>12} {:>9} {:>10}\n", "images",
             "change-pt s", "verdict s", "warm-up", "direct s", "direct",
             "speed-up");
  for (std::size_t n = 1000; n <= max; n *= 10) {
    const std::vector<double> y = planted_series(n, n);
    int fast = 0;
    const double fast_s = seconds_of(
        [&] { fast = mold::change_point(y, int(n / 2), /*direct_up_to=*/0); });
    const mold::SeriesRules rules;
    mold::SeriesVerdict verdict;
    const double verdict_s = seconds_of(
        [&] { verdict = mold::judge_series("allocated", y, y.back(), rules); });
    std::string direct_s = "-", direct = "-", speedup = "-";
    if (n <= direct_max) {
      int slow = 0;
      const double s = seconds_of([&] {
        slow = mold::change_point(y, int(n / 2), /*direct_up_to=*/n);
      });
      direct_s = fmt::format("{:.4f}", s);
      direct = std::to_string(slow);
      speedup = fmt::format("{:.0f}x", s / std::max(fast_s, 1e-9));
    }
    fmt::print("{:>9} {:>12.4f} {:>12.4f} {:>9} {:>12} {:>9} {:>10}   {}\n", n,
               fast_s, verdict_s, fast, direct_s, direct, speedup,
               mold::to_string(verdict.shape));
  }
  return 0;
}
