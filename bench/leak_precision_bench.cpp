// The leak verdict's precision on planted patterns (docs/profiler.md, "How
// good the rules are"): leaks of several shapes, bounded caches of several
// fill lengths and jitters, oscillations and carried stashes, each over many
// seeds, with allocation scopes (the cpu backend: exact attribution) and
// without (cuda-like: inferred). Prints per pattern the verdicts, the
// detection or false-alarm rate, the images a verdict needs, the slope's and
// the attribution's error, how often the slope's 95% interval covers the
// leak's rate, and parity's verdict, so that a change of rule is judged by
// numbers.
//
//   leak_precision_bench [--seeds 100] [--images 12] [--pattern NAME]
//                        [--show N: the first N unexpected verdicts' series]

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/parity.hpp>
#include <string>
#include <vector>

#include "support/planted_memory.hpp"

using mold::kKiB;
using mold::kMiB;
namespace planted = mold::test::planted;

namespace {

enum class Expect { leak, bounded, clean, carried };

struct Pattern {
  std::string name;
  Expect expect;
  double rate = 0;    ///< leaks: bytes per image (0: as the run drew them)
  std::string phase;  ///< leaks: the phase that keeps them
  std::function<mold::test::PlantedStep(std::uint64_t seed)> make;
};

std::vector<Pattern> patterns() {
  using S = std::uint64_t;
  return {
      {"flat", Expect::clean, 0, "", [](S) { return planted::all({}); }},
      {"leak 16 KiB denoise", Expect::leak, 16 * kKiB, "denoise",
       [](S) { return planted::leak("denoise", 16 * kKiB); }},
      {"leak 4 KiB text_encode", Expect::leak, 4 * kKiB, "text_encode",
       [](S) { return planted::leak("text_encode", 4 * kKiB); }},
      {"leak 32-96 KiB vae_decode", Expect::leak, 0, "vae_decode",
       [](S) {
         return planted::jittered_leak("vae_decode", 32 * kKiB, 96 * kKiB);
       }},
      {"leak 32 KiB between phases", Expect::leak, 32 * kKiB, "",
       [](S) { return planted::leak("", 32 * kKiB); }},
      {"buffer grown 64 KiB (realloc)", Expect::leak, 64 * kKiB, "denoise",
       [](S) { return planted::growing_buffer("denoise", 64 * kKiB); }},
      {"leak 256 KiB every 3rd", Expect::leak, 256 * kKiB / 3.0, "denoise",
       [](S s) {
         return planted::leak("denoise", 256 * kKiB, 3, 0, int(s % 3));
       }},
      {"leak 512 KiB every 4th", Expect::leak, 128 * kKiB, "denoise",
       [](S s) {
         return planted::leak("denoise", 512 * kKiB, 4, 0, int(s % 4));
       }},
      {"flat 4, then 128 KiB", Expect::leak, 128 * kKiB, "vae_decode",
       [](S) { return planted::leak("vae_decode", 128 * kKiB, 1, 4); }},
      {"flat 6, then 64 KiB", Expect::leak, 64 * kKiB, "text_encode",
       [](S) { return planted::leak("text_encode", 64 * kKiB, 1, 6); }},
      {"leak 64 KiB + LRU 3x128-384", Expect::leak, 64 * kKiB, "denoise",
       [](S) {
         return planted::all(
             {planted::leak("denoise", 64 * kKiB),
              planted::lru("text_encode", 3, 128 * kKiB, 384 * kKiB)});
       }},
      {"leak 128 KiB + fill 5x256", Expect::leak, 128 * kKiB, "vae_decode",
       [](S) {
         return planted::all(
             {planted::leak("vae_decode", 128 * kKiB),
              planted::lru("text_encode", 5, 256 * kKiB, 256 * kKiB)});
       }},
      {"LRU 3x128-384 KiB", Expect::bounded, 0, "",
       [](S) {
         return planted::lru("text_encode", 3, 128 * kKiB, 384 * kKiB);
       }},
      {"LRU 5x64-512 KiB", Expect::bounded, 0, "",
       [](S) { return planted::lru("denoise", 5, 64 * kKiB, 512 * kKiB); }},
      {"LRU 2x16-1024 KiB", Expect::bounded, 0, "",
       [](S) { return planted::lru("vae_decode", 2, 16 * kKiB, 1024 * kKiB); }},
      {"LRU 4x1-2 MiB", Expect::bounded, 0, "",
       [](S) { return planted::lru("denoise", 4, kMiB, 2 * kMiB); }},
      {"leak 128 KiB for 5, then stops", Expect::bounded, 0, "",
       [](S) { return planted::leak_until("vae_decode", 128 * kKiB, 5); }},
      {"fill 3x256 KiB", Expect::bounded, 0, "",
       [](S) {
         return planted::lru("text_encode", 3, 256 * kKiB, 256 * kKiB);
       }},
      {"fill 5x256 KiB", Expect::bounded, 0, "",
       [](S) {
         return planted::lru("text_encode", 5, 256 * kKiB, 256 * kKiB);
       }},
      {"fill 6x200-300 KiB", Expect::bounded, 0, "",
       [](S) { return planted::lru("denoise", 6, 200 * kKiB, 300 * kKiB); }},
      {"two caches 2x + 4x", Expect::bounded, 0, "",
       [](S) {
         return planted::all(
             {planted::lru("text_encode", 2, 64 * kKiB, 512 * kKiB),
              planted::lru("vae_decode", 4, 128 * kKiB, 256 * kKiB)});
       }},
      {"oscillation 1 MiB", Expect::clean, 0, "",
       [](S) { return planted::oscillation("denoise", kMiB); }},
      {"stash 2 MiB, freed next image", Expect::carried, 0, "denoise",
       [](S) { return planted::stash("denoise", "vae_decode", 2 * kMiB); }},
  };
}

const char* expect_name(Expect e) {
  switch (e) {
  case Expect::leak:
    return "leak";
  case Expect::bounded:
    return "bounded";
  case Expect::clean:
    return "clean";
  case Expect::carried:
    return "carried";
  }
  return "?";
}

struct Outcome {
  mold::LeakReport leak;
  mold::ParityReport parity;
  double truth = 0;  ///< a leak's bytes per image
};

Outcome run(const Pattern& pattern, std::uint64_t seed, int images,
            bool attributed) {
  mold::test::PlantedOptions o;
  o.images = images;
  o.seed = seed;
  o.attributed = attributed;
  const auto profile = mold::test::planted_profile(pattern.make(seed), o);
  Outcome out{mold::analyze_leaks(profile), mold::check_parity(profile),
              pattern.rate};
  if (out.truth == 0 && images > 1)  // a leak whose size the run draws
    out.truth = double(profile.images.back().after.allocated -
                       profile.images.front().after.allocated) /
                (images - 1);
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double worst(const std::vector<double>& v) {
  double w = 0;
  for (const double x : v) w = std::max(w, std::abs(x));
  return v.empty() ? NAN : w;
}

std::string percent(double x) {
  return std::isnan(x) ? "-" : fmt::format("{:.1f}", 100 * x);
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 100, images = 12, show = 0;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seeds")
      seeds = std::atoi(argv[i + 1]);
    else if (flag == "--images")
      images = std::atoi(argv[i + 1]);
    else if (flag == "--pattern")
      only = argv[i + 1];
    else if (flag == "--show")
      show = std::atoi(argv[i + 1]);
    else {
      fmt::print(stderr,
                 "usage: leak_precision_bench [--seeds 100] [--images 12] "
                 "[--pattern NAME]\n");
      return 2;
    }
  }
  if (seeds < 1 || images < 4 || images > 1000) {
    fmt::print(stderr, "--seeds >= 1 and --images 4 to 1000\n");
    return 2;
  }
  fmt::print(
      "leak verdicts over {} seeds at {} images (rates in %; errors: "
      "median / worst, %)\n\n",
      seeds, images);
  for (const bool attributed : {true, false}) {
    fmt::print("{}\n", attributed
                           ? "with allocation scopes (cpu: exact attribution)"
                           : "without (cuda-like: attribution inferred)");
    fmt::print(
        "{:<31} {:>7} {:>5} {:>5} {:>5} {:>5} {:>5}  {:>9} {:>13} {:>5} "
        "{:>13} {:>6} {:>7}\n",
        "pattern", "expect", "leak", "bound", "clean", "undec", "phase",
        "images", "slope err", "cover", "attrib err", "parity", "carried");
    int alarms = 0, alarm_runs = 0, found = 0, leak_runs = 0;
    for (const auto& pattern : patterns()) {
      if (!only.empty() && pattern.name.find(only) == std::string::npos)
        continue;
      std::map<mold::LeakVerdict, int> verdicts;
      int phase_right = 0, broken = 0, carried = 0;
      std::vector<double> slope_err, attrib_err, needed;
      int covered = 0;
      for (int s = 0; s < seeds; ++s) {
        const Outcome out = run(pattern, std::uint64_t(s), images, attributed);
        ++verdicts[out.leak.verdict];
        const bool expected =
            pattern.expect == Expect::leak
                ? out.leak.verdict == mold::LeakVerdict::leak
                : out.leak.verdict != mold::LeakVerdict::leak &&
                      out.leak.verdict != mold::LeakVerdict::undecided;
        const bool far_off =
            pattern.expect == Expect::leak &&
            out.leak.verdict == mold::LeakVerdict::leak &&
            std::abs(out.leak.allocated.trend.slope / out.truth - 1) > 0.1;
        if ((!expected || far_off) && show > 0) {
          --show;
          std::string values;
          mold::test::PlantedOptions o;
          o.images = images;
          o.seed = std::uint64_t(s);
          o.attributed = attributed;
          const auto p =
              mold::test::planted_profile(pattern.make(std::uint64_t(s)), o);
          for (const auto& img : p.images)
            values += fmt::format(
                " {:.0f}", double(img.after.allocated - o.weights) / 1024);
          fmt::print("  [{} seed {}] KiB:{}\n    {}\n    {}\n", pattern.name, s,
                     values, out.leak.summary, out.leak.allocated.reason);
        }
        broken += !out.parity.ok;
        carried += out.parity.carried;
        if (pattern.expect == Expect::leak &&
            out.leak.verdict == mold::LeakVerdict::leak) {
          slope_err.push_back(out.leak.allocated.trend.slope / out.truth - 1);
          covered += out.leak.allocated.slope_low <= out.truth * 1.000001 &&
                     out.leak.allocated.slope_high >= out.truth * 0.999999;
          if (!out.leak.attributions.empty()) {
            const auto& a = out.leak.attributions.front();
            phase_right += a.phase == pattern.phase;
            attrib_err.push_back(a.bytes_per_image / out.truth - 1);
          }
        }
        // The images the expected verdict needs (leak or bounded).
        if (pattern.expect == Expect::leak ||
            pattern.expect == Expect::bounded) {
          const auto want = pattern.expect == Expect::leak
                                ? mold::LeakVerdict::leak
                                : mold::LeakVerdict::bounded;
          int n = 4;
          while (n <= 48 &&
                 run(pattern, std::uint64_t(s), n, attributed).leak.verdict !=
                     want)
            ++n;
          needed.push_back(n);
        }
      }
      const int leaks = verdicts[mold::LeakVerdict::leak];
      if (pattern.expect == Expect::leak) {
        found += leaks;
        leak_runs += seeds;
      } else {
        alarms += leaks;
        alarm_runs += seeds;
      }
      auto rate = [&](mold::LeakVerdict v) {
        return percent(double(verdicts[v]) / seeds);
      };
      const bool is_leak = pattern.expect == Expect::leak;
      fmt::print(
          "{:<31} {:>7} {:>5} {:>5} {:>5} {:>5} {:>5}  {:>9} {:>13} {:>5} "
          "{:>13} {:>6} {:>7}\n",
          pattern.name, expect_name(pattern.expect),
          rate(mold::LeakVerdict::leak), rate(mold::LeakVerdict::bounded),
          rate(mold::LeakVerdict::clean), rate(mold::LeakVerdict::undecided),
          is_leak && leaks ? percent(double(phase_right) / leaks) : "-",
          needed.empty()
              ? std::string("-")
              : fmt::format("{:.0f} / {:.0f}", median(needed), worst(needed)),
          is_leak && leaks ? fmt::format("{} / {}", percent(median(slope_err)),
                                         percent(worst(slope_err)))
                           : "-",
          is_leak && leaks ? percent(double(covered) / leaks) : "-",
          is_leak && !attrib_err.empty()
              ? fmt::format("{} / {}", percent(median(attrib_err)),
                            percent(worst(attrib_err)))
              : "-",
          percent(double(broken) / seeds), percent(double(carried) / seeds));
    }
    fmt::print(
        "false alarms (a leak called on a pattern without one): {} of {} "
        "runs ({}%); leaks found: {} of {} runs ({}%)\n\n",
        alarms, alarm_runs,
        alarm_runs ? percent(double(alarms) / alarm_runs) : "-", found,
        leak_runs, leak_runs ? percent(double(found) / leak_runs) : "-");
  }
  return 0;
}
