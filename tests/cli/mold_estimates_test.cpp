// The tiny Z-Image's estimates on the cpu backend against the working memory
// mold run measures (each phase's peak above what was allocated when it
// started), at sizes and prompt lengths that were not used to fit the
// constants (plugins/zimage/zimage_estimators.cpp, zimage_pipeline.cpp):
// each within 1.00-1.10 of the measurement.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/sanitizer.hpp"
#include "support/source_images.hpp"

using mold::test::run_mold;
using mold::test::TempDir;

namespace {

std::string words(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += i ? " river stone cloud" : "river";
  return text;
}

}  // namespace

TEST_CASE("tiny Z-Image estimates cover measured peaks within 1.00-1.10",
          "[mold][estimate]") {
  struct Case {
    const char* model;
    int size;
    int prompt_words;
  };
  // The q8 transformer dequantizes its largest matrix into a buffer; the
  // timestep's MLP and the modulations (a row per image) are multiplied
  // from their blocks, so at the tiny width it is the feed-forward's, not
  // t_embedder's (1024 x 256).
  for (const Case c :
       {Case{"z-image-turbo", 160, 40}, Case{"z-image-turbo", 320, 100},
        Case{"z-image-turbo", 448, 150}, Case{"z-image-turbo:q8", 160, 40}}) {
    TempDir out;
    const auto r =
        run_mold({"run", c.model, words(c.prompt_words), "--tiny", "--width",
                  std::to_string(c.size), "--height", std::to_string(c.size),
                  "--steps", "1", "--json", "--output", out.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto report = nlohmann::json::parse(r.out);
    for (const auto& phase : report["phases"]) {
      const double measured =
          double(phase["after"]["peak_allocated"].get<long>() -
                 phase["before"]["allocated"].get<long>());
      const double estimate = double(phase["estimate_bytes"].get<long>());
      INFO(c.model << ", " << c.size << " px, " << c.prompt_words << " words, "
                   << phase["phase"].get<std::string>() << ": estimate "
                   << estimate << ", measured " << measured);
      REQUIRE(measured > 0);
      CHECK(estimate / measured >= 1.00);
      CHECK(estimate / measured <= 1.10);
    }
  }
}

TEST_CASE(
    "tiny Z-Image bfloat16 estimates cover measured peaks with 16 compute "
    "threads, each thread past the first adding its matrix-product scratch",
    "[mold][estimate]") {
  // With 16 threads the text encoder peaks while a matrix product runs, each
  // thread with its own packing buffers, above its one-thread peak.
  const auto run = [&](const char* threads, int stones) {
    TempDir out;
    std::string prompt = "stone";  // 60 stones: 68 tokens with the template
    for (int i = 1; i < stones; ++i) prompt += " stone";
    const auto r =
        run_mold({"run", "z-image-turbo", prompt, "--tiny", "--dtype",
                  "bfloat16", "--width", "192", "--height", "192", "--steps",
                  "1", "--json", "--output", out.path()},
                 {{"OMP_NUM_THREADS", threads}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::map<std::string, std::pair<double, double>> phases;
    const auto report = nlohmann::json::parse(r.out);
    for (const auto& phase : report["phases"]) {
      CHECK(phase["workload"]["threads"] == std::atoi(threads));
      phases[phase["phase"].get<std::string>()] = {
          double(phase["estimate_bytes"].get<long>()),
          double(phase["after"]["peak_allocated"].get<long>() -
                 phase["before"]["allocated"].get<long>())};
    }
    return phases;
  };
  const auto one = run("1", 60);
  const auto many = run("16", 60);
  // One word: the transformer peaks in its timestep MLP (one row, 1024
  // wide), beside fewer tensors than its layers' products.
  const auto short_prompt = run("16", 1);
  // The VAE's estimate counts no thread scratch: none with oneDNN's
  // avx512_core_bf16 kernels (where its table was measured); with the others
  // its convolutions and attention take some per thread
  // (docs/architecture.md, "Threads"): an open gap, said, not hidden.
  const auto kernel = mold::host_cpu_matmul_kernel();
  for (const auto* phases : {&many, &short_prompt})
    for (const auto& [op, values] : *phases) {
      const auto [estimate, measured] = values;
      INFO(op << " at 16 threads: estimate " << estimate << ", measured "
              << measured << "; at 1 thread: estimate " << one.at(op).first
              << "; " << mold::to_string(kernel));
      REQUIRE(measured > 0);
      if (op == "vae_decode" && kernel != mold::CpuMatmulKernel::avx512_bf16) {
        if (estimate < measured)
          WARN("the VAE's thread scratch is not counted with "
               << mold::to_string(kernel) << ": " << estimate / measured);
        continue;
      }
      CHECK(estimate / measured >= 1.00);
    }
  // The one-thread estimates would be below: the case tests the scratch.
  CHECK(many.at("text_encode").second > one.at("text_encode").first);
  // And the short prompt's denoise more than doubles its one-thread peak.
  const auto one_short = run("1", 1);
  CHECK(short_prompt.at("denoise").second > 2 * one_short.at("denoise").second);
}

TEST_CASE(
    "tiny Qwen-Image estimates cover measured peaks within 1.00-1.10, edits "
    "and true CFG included",
    "[mold][estimate][qwen_image]") {
  TempDir dir;
  // Source images of other shapes than calibration used (it ran squares).
  const auto source = [&](const std::string& name, int w, int h) {
    return mold::test::write_source_png(dir.path(), name, w, h);
  };
  struct Case {
    std::vector<std::string> args;
    const char* what;
  };
  const std::string wide = source("wide.png", 300, 120);
  const std::string tall = source("tall.png", 90, 200);
  const std::vector<Case> cases = {
      {{"qwen-image", words(30), "--width", "160", "--height", "288"},
       "text-to-image 160x288"},
      {{"qwen-image", words(90), "--width", "320", "--height", "320"},
       "text-to-image 320x320"},
      {{"qwen-image-edit-2511:q4", words(12), "--image", wide},
       "edit of one wide image"},
      {{"qwen-image-edit-2511", words(20), "--image", wide, "--image", tall,
        "--negative", "blurry", "--guidance", "4"},
       "edit of two images with true CFG"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(),
                {"--tiny", "--steps", "2", "--json", "--output", dir.path()});
    const auto r = run_mold(args);
    INFO(c.what << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const auto report = nlohmann::json::parse(r.out);
    for (const auto& phase : report["phases"]) {
      const double measured =
          double(phase["after"]["peak_allocated"].get<long>() -
                 phase["before"]["allocated"].get<long>());
      const double estimate = double(phase["estimate_bytes"].get<long>());
      INFO(c.what << ", " << phase["phase"].get<std::string>() << ": estimate "
                  << estimate << ", measured " << measured);
      REQUIRE(measured > 0);
      CHECK(estimate / measured >= 1.00);
      CHECK(estimate / measured <= 1.10);
    }
  }
}

namespace {

/// The denoise phase of one tiny mold run at `size`: its estimate, its
/// working peak and where the estimate came from.
struct DenoiseRun {
  double estimate = 0, measured = 0;
  std::string origin, source;
};

DenoiseRun denoise_at(int size, const std::map<std::string, std::string>& env) {
  TempDir out;
  const auto r =
      run_mold({"run", "z-image-turbo", words(20), "--tiny", "--width",
                std::to_string(size), "--height", std::to_string(size),
                "--steps", "1", "--json", "--output", out.path()},
               env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  for (const auto& phase : report["phases"])
    if (phase["phase"] == "denoise")
      return {double(phase["estimate_bytes"].get<long>()),
              double(phase["after"]["peak_allocated"].get<long>() -
                     phase["before"]["allocated"].get<long>()),
              phase["estimate_origin"].get<std::string>(),
              phase["estimate_source"].get<std::string>()};
  FAIL("no denoise phase in " << r.out);
  return {};
}

}  // namespace

TEST_CASE(
    "a denoise table made wrong converges on the measured peaks within "
    "5 runs of distinct shapes, never below a peak measured before",
    "[mold][estimate][learned]") {
  // The tiny denoise's constants, halved or doubled by a user calibration
  // file; the runs share one state folder (their measured history).
#if defined(MOLD_TEST_SANITIZED)
  // Under AddressSanitizer each run is slow: the smaller table (the one an
  // estimate must never stay below) alone; tests/unit/learned_estimate_test
  // checks both there.
  const double wrong = GENERATE(0.5);
#else
  const double wrong = GENERATE(0.5, 2.0);
#endif
  INFO("table constants x" << wrong);
  TempDir home;
  const std::string config = home.path() + "/config";
  home.write("config/mold/calibration/zimage.calibration.toml",
             "[denoise.cpu]\n"
             "rotary_factor = " +
                 std::to_string(1.00194 * wrong) +
                 "\nattention_factor = " + std::to_string(1.0212 * wrong) +
                 "\nfeed_forward_factor = " + std::to_string(1.0212 * wrong) +
                 "\nfixed_bytes = " + std::to_string(4560.97 * wrong) + "\n");
  const std::map<std::string, std::string> env = {
      {"XDG_CONFIG_HOME", config}, {"XDG_STATE_HOME", home.path() + "/state"}};
  std::map<int, double> peaks;
  for (const int size : {64, 320, 128, 256, 192}) {
    const DenoiseRun run = denoise_at(size, env);
    INFO(size << " px: estimate " << run.estimate << ", measured "
              << run.measured << " (" << run.source << ")");
    REQUIRE(run.measured > 0);
    peaks[size] = run.measured;
  }
  // After 5 shapes: a new one inside the measured sizes, and one measured
  // before, each within [1.00, 1.10] of its peak.
  for (const int size : {224, 128}) {
    const DenoiseRun run = denoise_at(size, env);
    INFO(size << " px: estimate " << run.estimate << ", measured "
              << run.measured << " (" << run.source << ")");
    CHECK(run.origin == "learned");
    CHECK(run.estimate / run.measured >= 1.00);
    CHECK(run.estimate / run.measured <= 1.10);
    if (peaks.count(size)) CHECK(run.estimate >= peaks[size]);
  }
  // molddiag estimate says the same, from the same history.
  const auto e = mold::test::run_molddiag(
      {"estimate",      "--family",  "zimage", "--op",
       "denoise",       "--backend", "cpu",    "--model",
       "z-image-turbo", "--arch",    "tiny",   "--width",
       "224",           "--height",  "224",    "--dtype",
       "float32",       "--tokens",  "1",      "--json"},
      env);
  INFO(e.err);
  REQUIRE(e.exit_code == 0);
  // (Another token count is another shape of the same op: still learned.)
  CHECK(nlohmann::json::parse(e.out)["origin"] == "learned");
}
