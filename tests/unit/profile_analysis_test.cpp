// The profiler's analyses on synthetic profiles: the trend fit, warm-up,
// the leak rules (every-step rise, slope with R^2), caching that is not a
// leak, host-only leaks, exact and inferred attribution, parked components
// that hold memory, and parity against the first image.

#include <catch2/catch.hpp>
#include <functional>
#include <mold/profile/html_report.hpp>
#include <mold/profile/leak_analysis.hpp>
#include <mold/profile/parity.hpp>
#include <mold/profile/profile_report.hpp>
#include <mold/profile/series_verdict.hpp>
#include <mold/profile/trend.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "support/planted_memory.hpp"

using namespace mold;

namespace {

/// A profile whose image i ends with allocated[i], reserved[i] and rss[i].
MemoryProfile series(const std::vector<double>& allocated,
                     std::vector<double> reserved = {},
                     std::vector<double> rss = {}) {
  if (reserved.empty()) reserved = allocated;
  if (rss.empty()) rss.assign(allocated.size(), 500.0 * double(kMiB));
  MemoryProfile p;
  p.driver = "local";
  p.backend = "cuda";
  for (std::size_t i = 0; i < allocated.size(); ++i) {
    ImageSample s;
    s.image = int(i);
    s.after.allocated = Bytes(allocated[i]);
    s.after.reserved = Bytes(reserved[i]);
    s.after.peak_allocated = Bytes(allocated[i]) + 10 * kMiB;
    s.after.host_rss = Bytes(rss[i]);
    p.images.push_back(s);
  }
  return p;
}

CacheEntryState entry(const std::string& name, Bytes bytes,
                      Residency residency) {
  CacheEntryState e;
  e.name = name;
  e.bytes = bytes;
  e.residency = residency;
  return e;
}

std::vector<double> line(int n, double start, double step) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(start + step * i);
  return v;
}

}  // namespace

TEST_CASE("trend: slope, R^2 and the 95% interval", "[profile]") {
  const Trend flat = fit_trend({5, 5, 5, 5});
  CHECK(flat.slope == 0);
  CHECK(flat.r_squared == 1);
  CHECK(flat.slope_low == 0);
  CHECK(flat.slope_high == 0);

  const Trend exact = fit_trend(line(6, 100, 3));
  CHECK(exact.slope == Approx(3));
  CHECK(exact.intercept == Approx(100));
  CHECK(exact.r_squared == 1);
  CHECK(exact.min_step == Approx(3));

  // y = 2x + noise; the textbook formulas worked out separately give slope
  // 2.025714, R^2 0.997729 and a slope standard error of 0.048319.
  const Trend noisy = fit_trend({0.1, 2.3, 3.9, 6.2, 8.0, 10.4});
  CHECK(noisy.slope == Approx(2.025714).epsilon(1e-6));
  CHECK(noisy.r_squared == Approx(0.997729).epsilon(1e-6));
  CHECK(noisy.slope_high - noisy.slope ==
        Approx(2.776 * 0.048319).epsilon(1e-4));
  CHECK(noisy.slope - noisy.slope_low ==
        Approx(noisy.slope_high - noisy.slope));

  CHECK(student_t_975(1) == Approx(12.706));
  CHECK(student_t_975(10) == Approx(2.228));
  CHECK(student_t_975(1000) == Approx(1.96));
  CHECK(fit_trend({}).points == 0);
  CHECK(fit_trend({7}).slope == 0);
}

TEST_CASE("a steady leak is found after warm-up, its slope exact",
          "[profile]") {
  const MemoryProfile p = series(line(12, 100 * kMiB, 64 * kKiB));
  const LeakReport r = analyze_leaks(p);
  CHECK(r.verdict == LeakVerdict::leak);
  CHECK(r.warmup == 0);  // a line from the first image: no change-point
  CHECK(r.allocated.values.size() == 12);
  CHECK(r.allocated.rises_every_image);
  CHECK(r.allocated.trend.slope == Approx(64 * kKiB));
  CHECK_THAT(r.summary, Catch::StartsWith("LEAK: allocated grows 64.00 KiB"));
  // No scopes on this backend: the attribution is inferred (no phases here,
  // so none).
  CHECK(r.attributions.empty());
}

TEST_CASE("a noisy leak is found by its slope, noise alone is not",
          "[profile]") {
  // 64 KiB an image with up to +-60 KiB of noise around it: some images
  // fall, so it does not rise at every image; the slope finds it. (0.1% of
  // the ~30 MiB peak is below 64 KiB.)
  std::vector<double> noisy = line(14, 20 * kMiB, 64 * kKiB);
  const double wiggle[] = {20, -20, 10, -15, 18, -5,  0,
                           12, -20, 5,  -8,  20, -10, 3};
  for (std::size_t i = 0; i < noisy.size(); ++i)
    noisy[i] += 3 * wiggle[i] * kKiB;
  std::vector<double> flat_reserved(noisy.size(), 200.0 * kMiB);
  LeakReport r = analyze_leaks(series(noisy, flat_reserved));
  CHECK(r.warmup == 0);
  CHECK_FALSE(r.allocated.rises_every_image);
  CHECK(r.allocated.sloped);
  CHECK(r.verdict == LeakVerdict::leak);
  CHECK(r.allocated.trend.slope == Approx(64 * kKiB).epsilon(0.1));

  // The same noise around a flat line: clean.
  std::vector<double> noise(14, 20.0 * kMiB);
  for (std::size_t i = 0; i < noise.size(); ++i)
    noise[i] += 3 * wiggle[i] * kKiB;
  r = analyze_leaks(series(noise, flat_reserved));
  CHECK(r.verdict == LeakVerdict::clean);
  CHECK_FALSE(r.allocated.grows());
}

TEST_CASE("warm-up: growth that stops is bounded, not a leak", "[profile]") {
  // Reserved (and allocated) grow for 3 images, then stay.
  const std::vector<double> v = {10 * kMiB, 11 * kMiB, 12 * kMiB, 13 * kMiB,
                                 13 * kMiB, 13 * kMiB, 13 * kMiB, 13 * kMiB};
  const LeakReport r = analyze_leaks(series(v));
  CHECK(r.warmup == 3);
  CHECK(r.verdict == LeakVerdict::bounded);
  CHECK(r.allocated.shape == SeriesShape::bounded);
  CHECK(r.allocated.grew == Approx(3 * kMiB));
  CHECK_THAT(r.summary, Catch::StartsWith("bounded: allocated grew 3.00 MiB "
                                          "over images 1-3"));
}

TEST_CASE("reserved growth alone is caching, never a leak", "[profile]") {
  const std::vector<double> allocated(10, 50.0 * kMiB);
  const LeakReport r =
      analyze_leaks(series(allocated, line(10, 60 * kMiB, 2 * kMiB)));
  CHECK(r.verdict == LeakVerdict::clean);
  CHECK(r.caching);
  CHECK(r.reserved.grows());
  CHECK_THAT(r.summary, Catch::Contains("allocator caching"));
}

TEST_CASE("host memory growing with the device flat is a host leak",
          "[profile]") {
  const std::vector<double> allocated(10, 50.0 * kMiB);
  const LeakReport r = analyze_leaks(
      series(allocated, allocated, line(10, 400 * kMiB, 2 * kMiB)));
  CHECK(r.verdict == LeakVerdict::leak);
  CHECK(r.host_only);
  CHECK_THAT(r.summary, Catch::StartsWith("LEAK in host memory"));
}

TEST_CASE("too few images are said, not judged", "[profile]") {
  const LeakReport r = analyze_leaks(series(line(3, kMiB, kKiB * 64)));
  CHECK(r.verdict == LeakVerdict::too_few);
  CHECK_THAT(r.summary, Catch::Contains("at least 4"));
}

TEST_CASE(
    "attribution: exact from scopes, inferred from phases, parked "
    "holdings named",
    "[profile]") {
  MemoryProfile p = series(line(8, 100 * kMiB, 64 * kKiB),
                           std::vector<double>(8, 300.0 * kMiB));
  // Phases: denoise leaves 64 KiB each image, the others nothing.
  for (int i = 0; i < 8; ++i) {
    for (const char* phase : {"text_encode", "denoise", "vae_decode"}) {
      PhaseSample s;
      s.image = i;
      s.phase = phase;
      s.component = phase == std::string("denoise") ? "transformer" : "x";
      s.before.allocated = 100 * kMiB;
      s.after.allocated =
          s.before.allocated + (s.phase == "denoise" ? 64 * kKiB : 0);
      p.phases.push_back(s);
    }
  }
  LeakReport r = analyze_leaks(p);
  REQUIRE(r.verdict == LeakVerdict::leak);
  REQUIRE(r.attributions.size() == 1);
  CHECK(r.attributions[0].phase == "denoise");
  CHECK_FALSE(r.attributions[0].exact);
  CHECK(r.attributions[0].bytes_per_image == Approx(64 * kKiB));

  // With scopes: the residue of earlier images names the phase exactly; a
  // parked component's load scope still live is a parked holding.
  ImageSample& last = p.images.back();
  last.attributed = true;
  for (int i = 0; i < 7; ++i)
    last.residue.push_back({i, "vae_decode", "vae", "phase", 64 * kKiB});
  last.residue.push_back(
      {0, "text_encode", "text_encoder", "load", 512 * kKiB});
  last.residency = {entry("text_encoder", 2 * kMiB, Residency::parked),
                    entry("vae", kMiB, Residency::device)};
  r = analyze_leaks(p);
  REQUIRE_FALSE(r.attributions.empty());
  CHECK(r.attributions[0].phase == "vae_decode");
  CHECK(r.attributions[0].exact);
  CHECK(r.attributions[0].bytes_per_image == Approx(64 * kKiB));
  REQUIRE(r.parked_holding.size() == 1);
  CHECK(r.parked_holding[0].component == "text_encoder");
  CHECK(r.parked_holding[0].held == 512 * kKiB);
  CHECK(r.parked_holding[0].exact);

  // Without scopes, a park that gave back too little says the same.
  MemoryProfile flat = series(std::vector<double>(6, 10.0 * kMiB));
  CacheEntryState te = entry("text_encoder", 2 * kMiB, Residency::parked);
  te.released_on_park = 1536 * kKiB;
  flat.images.back().residency = {te};
  r = analyze_leaks(flat);
  CHECK(r.verdict == LeakVerdict::leak);
  REQUIRE(r.parked_holding.size() == 1);
  CHECK(r.parked_holding[0].held == 512 * kKiB);
  CHECK_FALSE(r.parked_holding[0].exact);
  CHECK_THAT(r.summary, Catch::Contains("text_encoder is parked but still"));
}

TEST_CASE("parity: each phase against image 1, beyond resident weights",
          "[profile]") {
  MemoryProfile p;
  auto phase = [&](int image, const char* name, Bytes peak, Bytes weights) {
    PhaseSample s;
    s.image = image;
    s.phase = name;
    s.before.allocated = weights;
    s.after.peak_allocated = peak;
    s.residency = {entry("w", weights, Residency::device)};
    p.phases.push_back(s);
  };
  for (int i = 0; i < 3; ++i) p.images.push_back(ImageSample{});
  // Image 2 keeps more weights resident (the cache's choice): not a breach.
  phase(0, "text_encode", 10 * kMiB, 8 * kMiB);
  phase(1, "text_encode", 30 * kMiB, 28 * kMiB);
  phase(2, "text_encode", 30 * kMiB, 28 * kMiB);
  // Image 3's decode needs 5 MiB more than image 1's beyond its weights.
  phase(0, "vae_decode", 40 * kMiB, 20 * kMiB);
  phase(1, "vae_decode", 40 * kMiB, 20 * kMiB);
  phase(2, "vae_decode", 45 * kMiB, 20 * kMiB);
  ParityReport r = check_parity(p);
  CHECK_FALSE(r.ok);
  REQUIRE(r.phases.size() == 2);
  CHECK(r.phases[0].ok);
  CHECK_FALSE(r.phases[1].ok);
  CHECK(r.phases[1].worst_image == 2);
  CHECK(r.phases[1].worst - r.phases[1].first == 5 * kMiB);
  CHECK_THAT(r.summary,
             Catch::StartsWith("parity broken: vae_decode of image 3"));
  // Within the tolerance: 5 MiB of 20 MiB is 25%.
  r = check_parity(p, {0.30, kMiB});
  CHECK(r.ok);
}

TEST_CASE("the JSON report has the schema version and every part",
          "[profile]") {
  const MemoryProfile p = series(line(8, 100 * kMiB, 64 * kKiB));
  const LeakReport leak = analyze_leaks(p);
  const ParityReport parity = check_parity(p);
  const auto j = nlohmann::json::parse(profile_json(p, &leak, &parity));
  CHECK(j["schema"] == kProfileSchema);
  CHECK(j["images"].size() == 8);
  CHECK(j["leak"]["verdict"] == "leak");
  CHECK(j["leak"]["series"]["allocated"]["slope"].get<double>() ==
        Approx(64 * kKiB));
  CHECK(j["parity"]["ok"] == true);
  CHECK(j["residue_at_end"].is_null());
  const auto none = nlohmann::json::parse(profile_json(p, nullptr, nullptr));
  CHECK_FALSE(none.contains("leak"));
  CHECK_FALSE(none.contains("parity"));
}

TEST_CASE(
    "the HTML report: self-contained, every chart, small for 1,000 "
    "images",
    "[profile]") {
  MemoryProfile p = series(line(1000, 100 * kMiB, 64 * kKiB));
  p.subject = "a <model> & \"weights\"";
  for (int i = 0; i < 1000; ++i)
    for (const char* phase : {"text_encode", "denoise", "vae_decode"}) {
      PhaseSample s;
      s.image = i;
      s.phase = phase;
      s.component = "c";
      s.before.allocated = 100 * kMiB + Bytes(i) * 64 * kKiB;
      s.after.allocated = s.before.allocated;
      s.after.peak_allocated =
          s.before.allocated + 3 * kMiB + Bytes(i % 7) * kKiB;
      s.estimate = 4 * kMiB;
      s.residency = {entry("c", 50 * kMiB, Residency::device)};
      p.phases.push_back(s);
    }
  const LeakReport leak = analyze_leaks(p);
  const ParityReport parity = check_parity(p);
  const std::string html = profile_html(p, &leak, &parity);
  INFO(html.size());
  CHECK(html.size() < 2 * 1000 * 1000);
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  for (const char* part :
       {"id=\"verdict\"", "class=\"verdict leak\"", "id=\"memory-per-image\"",
        "id=\"host-per-image\"", "id=\"peak-per-phase\"",
        "id=\"unaccounted-per-phase\"", "id=\"estimate-vs-measured\"",
        "id=\"series\"", "id=\"attribution\"", "id=\"parked\"", "id=\"parity\"",
        "class=\"series allocated\""})
    CHECK_THAT(html, Catch::Contains(part));
  // No network, no script: nothing to fetch, nothing to run.
  for (const char* absent :
       {"http://", "https://", "<script", "src=", "@import"})
    CHECK_THAT(html, !Catch::Contains(absent));
  // The subject is escaped.
  CHECK_THAT(html,
             Catch::Contains("a &lt;model&gt; &amp; &quot;weights&quot;"));
  CHECK(html_escape("<'&\">") == "&lt;&#39;&amp;&quot;&gt;");
  // Without analyses their sections are left out.
  const std::string bare = profile_html(p, nullptr, nullptr);
  CHECK_THAT(bare, !Catch::Contains("id=\"attribution\""));
  CHECK_THAT(bare, !Catch::Contains("id=\"parity\""));
  // An empty profile is still a page.
  CHECK_THAT(profile_html(MemoryProfile{}, nullptr, nullptr),
             Catch::EndsWith("</html>\n"));
}

namespace {

namespace planted = mold::test::planted;

LeakReport planted_leak(const mold::test::PlantedStep& step, std::uint64_t seed,
                        int images = 12, bool attributed = true) {
  mold::test::PlantedOptions o;
  o.images = images;
  o.seed = seed;
  o.attributed = attributed;
  return analyze_leaks(mold::test::planted_profile(step, o));
}

}  // namespace

TEST_CASE(
    "planted bounded caches that wander or fill slowly: never a leak over "
    "100 seeds, bounded where they stopped",
    "[profile][planted]") {
  struct Case {
    const char* name;
    std::function<mold::test::PlantedStep()> make;
  };
  const std::vector<Case> cases = {
      {"LRU 3 x 128-384 KiB",
       [] { return planted::lru("text_encode", 3, 128 * kKiB, 384 * kKiB); }},
      {"LRU 5 x 64-512 KiB",
       [] { return planted::lru("denoise", 5, 64 * kKiB, 512 * kKiB); }},
      {"fill 5 x 256 KiB",
       [] { return planted::lru("text_encode", 5, 256 * kKiB, 256 * kKiB); }},
      {"oscillation", [] { return planted::oscillation("denoise", kMiB); }},
  };
  for (const auto& c : cases) {
    for (const bool attributed : {true, false}) {
      int leaks = 0, bounded = 0;
      for (std::uint64_t seed = 0; seed < 100; ++seed) {
        const LeakReport r = planted_leak(c.make(), seed, 12, attributed);
        leaks += r.verdict == LeakVerdict::leak;
        bounded += r.verdict == LeakVerdict::bounded;
      }
      INFO(c.name << (attributed ? ", with scopes" : ", without"));
      CHECK(leaks == 0);
      if (std::string(c.name).rfind("fill", 0) == 0) CHECK(bounded == 100);
    }
  }
  // A fill of 5 at 6 images: too short to tell, and how many would.
  const LeakReport r = planted_leak(
      planted::lru("text_encode", 5, 256 * kKiB, 256 * kKiB), 0, 6);
  CHECK(r.verdict == LeakVerdict::undecided);
  CHECK(r.images_needed >= 8);
  CHECK_THAT(r.summary, Catch::Contains("run at least"));
}

TEST_CASE(
    "planted leaks of every shape: found with their phase, rate within 10%",
    "[profile][planted]") {
  struct Case {
    const char* name;
    std::function<mold::test::PlantedStep(std::uint64_t)> make;
    std::string phase;
    double rate;
  };
  const std::vector<Case> cases = {
      {"16 KiB an image",
       [](std::uint64_t) { return planted::leak("denoise", 16 * kKiB); },
       "denoise", 16 * kKiB},
      {"256 KiB every 3rd image",
       [](std::uint64_t s) {
         return planted::leak("denoise", 256 * kKiB, 3, 0, int(s % 3));
       },
       "denoise", 256 * kKiB / 3.0},
      {"flat 4, then 128 KiB",
       [](std::uint64_t) {
         return planted::leak("vae_decode", 128 * kKiB, 1, 4);
       },
       "vae_decode", 128 * kKiB},
      {"64 KiB under a wandering cache",
       [](std::uint64_t) {
         return planted::all(
             {planted::leak("denoise", 64 * kKiB),
              planted::lru("text_encode", 3, 128 * kKiB, 384 * kKiB)});
       },
       "denoise", 64 * kKiB},
  };
  for (const auto& c : cases)
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      INFO(c.name << ", seed " << seed);
      const LeakReport r = planted_leak(c.make(seed), seed);
      REQUIRE(r.verdict == LeakVerdict::leak);
      REQUIRE_FALSE(r.attributions.empty());
      CHECK(r.attributions[0].phase == c.phase);
      CHECK(r.attributions[0].exact);
      CHECK(r.attributions[0].bytes_per_image == Approx(c.rate).epsilon(0.1));
      CHECK_THAT(r.summary, Catch::Contains("kept by " + c.phase + " (exact)"));
    }
  // The plateau: warm-up found where the leak starts; slope and interval
  // right.
  const LeakReport late =
      planted_leak(planted::leak("vae_decode", 128 * kKiB, 1, 4), 0, 16);
  CHECK(late.warmup >= 3);
  CHECK(late.allocated.trend.slope == Approx(128 * kKiB));
  CHECK(late.allocated.slope_low <= 128 * kKiB);
  CHECK(late.allocated.slope_high >= 128 * kKiB);
}

TEST_CASE(
    "planted stash carried into the next image: parity says carried, "
    "and who kept it",
    "[profile][planted]") {
  for (const bool attributed : {true, false}) {
    INFO(attributed);
    mold::test::PlantedOptions o;
    o.images = 4;
    o.attributed = attributed;
    const MemoryProfile p = mold::test::planted_profile(
        planted::stash("denoise", "vae_decode", 2 * kMiB), o);
    const ParityReport r = check_parity(p);
    CHECK(r.ok);
    CHECK(r.carried);
    // Every phase of image 2 found it (the text encode first).
    const PhaseParity* row = nullptr;
    for (const auto& x : r.phases)
      if (x.carried_in && !row) row = &x;
    REQUIRE(row);
    CHECK(row->phase == "text_encode");
    CHECK(row->carried == 2 * kMiB);
    CHECK(row->carried_by == "denoise");
    CHECK(row->carried_exact == attributed);
    CHECK_THAT(r.summary,
               Catch::StartsWith("memory carried in: text_encode of image 2 "
                                 "found 2.00 MiB more") &&
                   Catch::Contains("kept by denoise of image 1"));
    // The series is flat: the stash is freed an image later.
    CHECK(analyze_leaks(p).verdict == LeakVerdict::clean);
  }
  // A phase whose own working memory grows breaks parity.
  MemoryProfile p = mold::test::planted_profile(planted::all({}), {});
  p.phases[3 * 5 + 1].after.peak_allocated += 4 * kMiB;  // image 6's denoise
  const ParityReport broken = check_parity(p);
  CHECK_FALSE(broken.ok);
  CHECK_THAT(broken.summary,
             Catch::StartsWith("parity broken: denoise of image 6 needs"));
}

TEST_CASE(
    "a leak whose first images were irregular: the short straight tail after "
    "the change-point is backed by the whole run rising",
    "[profile]") {
  // A fresh process's resident set under a 4 MiB-a-request leak, measured
  // under AddressSanitizer (molddiag leak --pid on tests/support's
  // leaky_process): 4.75 MiB steps, then 4.56 MiB ones; the change-point
  // leaves 4 images.
  const std::vector<double> bytes = {12111872, 16867328, 21622784, 26382336,
                                     31162368, 35917824, 40677376, 45428736};
  SeriesRules rules;
  rules.threshold = 256 * kKiB;
  const SeriesVerdict v = judge_series("host_rss", bytes, bytes.back(), rules);
  INFO(v.reason);
  CHECK(v.warmup == 4);  // the straight tail: 4 images
  CHECK(v.shape == SeriesShape::grows);
}

TEST_CASE(
    "the change-point of a long series comes from prefix sums, in linear time, "
    "and agrees with the direct fits",
    "[profile][leak]") {
  std::mt19937_64 random(11);
  std::normal_distribution<double> noise(0, 4096);
  // Each run's least-squares residual from prefix sums is fit_trend's.
  std::vector<double> y(500);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = 3e9 + 1024.0 * double(i) * double(i % 7) + noise(random);
  const SegmentLines lines(y);
  for (const auto& [a, b] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 500}, {0, 3}, {17, 20}, {40, 333}, {250, 500}, {499, 500}}) {
    INFO(a << ".." << b);
    const std::vector<double> part(y.begin() + std::ptrdiff_t(a),
                                   y.begin() + std::ptrdiff_t(b));
    const Trend t = fit_trend(part);
    double sse = 0;
    for (std::size_t i = 0; i < part.size(); ++i) {
      const double e = part[i] - (t.intercept + t.slope * double(i));
      sse += e * e;
    }
    if (part.size() < 3) sse = 0;
    CHECK(lines.sse(a, b) == Approx(sse).epsilon(1e-6).margin(1e-3));
  }
  // A planted bend: both ways find it, on series of several shapes.
  for (const std::size_t n : {40, 300, 1500}) {
    for (const std::size_t bend : {n / 10, n / 4, n / 3}) {
      std::vector<double> s(n);
      for (std::size_t i = 0; i < n; ++i)
        s[i] = 1e9 +
               (i < bend ? 65536.0 * double(i)
                         : 65536.0 * double(bend) + 1024.0 * double(i - bend)) +
               noise(random);
      INFO(n << " images, bend at " << bend);
      const int direct = change_point(s, int(n / 2), n);
      const int prefix = change_point(s, int(n / 2), 0);
      CHECK(prefix == direct);
      CHECK(std::abs(direct - int(bend)) <= 1);
    }
  }
  // 10^6 images: found, and fast enough to be judged at all (a quadratic
  // search would take hours).
  std::vector<double> big(1000000);
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = 1e9 +
             (i < 100000 ? 65536.0 * double(i)
                         : 65536e5 + 1024.0 * double(i - 100000)) +
             noise(random);
  CHECK(std::abs(change_point(big, 500000) - 100000) <= 1);
}
