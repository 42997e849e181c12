// mold run, the real binary: the tiny Z-Image with seeded weights end to end
// (PNG, text chunks, progress, --plan, --json, batches, parking under a
// memory limit) and its failure paths.

#include <sched.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <mold/device/blas_library.hpp>
#include <mold/device/usable_cpus.hpp>
#include <mold/plan/generate_schema.hpp>
#include <mold/runtime/png.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/aten_for_tests.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::kUnset;
using mold::test::run_mold;
using mold::test::TempDir;

namespace {

const std::string kPrompt = "a red fox in the snow";

std::vector<std::string> tiny_args(const TempDir& out,
                                   std::vector<std::string> more = {}) {
  std::vector<std::string> args = {
      "run", "z-image-turbo", kPrompt, "--tiny",   "--width", "64", "--height",
      "48",  "--steps",       "2",     "--output", out.path()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// Pins this thread (and so the processes it starts, as `taskset -c` would)
/// to the first `cpus` CPUs of its affinity mask; restores the mask after.
class PinnedCpus {
 public:
  explicit PinnedCpus(int cpus) {
    CPU_ZERO(&before_);
    if (sched_getaffinity(0, sizeof before_, &before_) != 0)
      throw std::runtime_error("sched_getaffinity failed");
    cpu_set_t pinned;
    CPU_ZERO(&pinned);
    for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < cpus; ++cpu)
      if (CPU_ISSET(cpu, &before_)) {
        CPU_SET(cpu, &pinned);
        ++taken;
      }
    if (sched_setaffinity(0, sizeof pinned, &pinned) != 0)
      throw std::runtime_error("sched_setaffinity failed");
  }
  ~PinnedCpus() { sched_setaffinity(0, sizeof before_, &before_); }
  PinnedCpus(const PinnedCpus&) = delete;
  PinnedCpus& operator=(const PinnedCpus&) = delete;

 private:
  cpu_set_t before_;
};

}  // namespace

TEST_CASE("mold run --tiny writes a PNG of the size asked, with its recipe",
          "[mold][run]") {
  TempDir out;
  const auto r = run_mold(tiny_args(out, {"--seed", "42"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const fs::path png = fs::path(out.path()) / "z-image-turbo-42.png";
  REQUIRE(fs::exists(png));
  const mold::PngImage image = mold::read_png(png);
  CHECK(image.width == 64);
  CHECK(image.height == 48);
  CHECK(image.text.at("prompt") == kPrompt);
  CHECK(image.text.at("seed") == "42");
  CHECK(image.text.at("model") == "z-image-turbo");
  CHECK(image.text.at("variant") == "bf16");
  CHECK(image.text.at("steps") == "2");
  CHECK(image.text.at("seeded_weights") == "true");
  CHECK_THAT(image.text.at("weights"), Catch::Contains("seeded"));
  // Not a flat image: the pipeline ran.
  std::size_t distinct = 0;
  std::vector<bool> seen(256);
  for (std::uint8_t v : image.rgb)
    if (!seen[v]) seen[v] = true, ++distinct;
  CHECK(distinct > 8);
  // Progress: every phase, steps, and the seeded label.
  CHECK_THAT(r.err, Catch::Contains("seeded weights"));
  CHECK_THAT(r.err, Catch::Contains("[1/1] text_encode: start"));
  CHECK_THAT(r.err, Catch::Contains("[1/1] denoise: step 2/2"));
  CHECK_THAT(r.err, Catch::Contains("[1/1] denoise: done, 2 steps"));
  CHECK_THAT(r.err, Catch::Contains("[1/1] vae_decode: done"));
  CHECK_THAT(r.err, Catch::Contains("saved"));
}

TEST_CASE("mold run --batch: seed + i, reproducible, never clobbering",
          "[mold][run]") {
  TempDir out;
  auto r = run_mold(tiny_args(out, {"--seed", "7", "--batch", "2"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto a = mold::read_png(fs::path(out.path()) / "z-image-turbo-7.png");
  const auto b = mold::read_png(fs::path(out.path()) / "z-image-turbo-8.png");
  CHECK(a.rgb != b.rgb);
  CHECK_THAT(r.err, Catch::Contains("[2/2] vae_decode: done"));
  // The same seed again: the same image, in a new file beside the first.
  r = run_mold(tiny_args(out, {"--seed", "7"}));
  REQUIRE(r.exit_code == 0);
  const auto again =
      mold::read_png(fs::path(out.path()) / "z-image-turbo-7-2.png");
  CHECK(again.rgb == a.rgb);
}

TEST_CASE("mold run --plan lists every phase and runs nothing",
          "[mold][run][plan]") {
  TempDir out;
  auto r = run_mold(tiny_args(out, {"--plan"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("text_encode") && Catch::Contains("denoise") &&
                 Catch::Contains("vae_decode") && Catch::Contains("resident"));
  CHECK(fs::is_empty(out.path()));
  r = run_mold(tiny_args(out, {"--plan", "--json"}));
  REQUIRE(r.exit_code == 0);
  const auto plan = nlohmann::json::parse(r.out);
  REQUIRE(plan["phases"].size() == 3);
  CHECK(plan["phases"][1]["phase"] == "denoise");
  CHECK(plan["phases"][1]["estimate_bytes"].get<long>() > 0);
  // Z-Image's guidance is pos + g * (pos - neg): any g above 0 encodes the
  // negative prompt too (diffusers' threshold), 1 and below included.
  r = run_mold(tiny_args(out, {"--plan", "--json", "--guidance", "0.5"}));
  REQUIRE(r.exit_code == 0);
  const auto guided = nlohmann::json::parse(r.out);
  REQUIRE(guided["phases"].size() == 4);
  CHECK(guided["phases"][1]["phase"] == "text_encode");
  CHECK(guided["phases"][2]["phase"] == "denoise");
}

TEST_CASE("mold run --json reports each phase with its memory", "[mold][run]") {
  TempDir out;
  const auto r = run_mold(tiny_args(out, {"--json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report["seeded_weights"] == true);
  CHECK(report["model"] == "z-image-turbo");
  REQUIRE(report["phases"].size() == 3);
  for (const auto& phase : report["phases"]) {
    CHECK(phase["status"] == "done");
    CHECK(phase["after"]["peak_allocated"].get<long>() > 0);
  }
  REQUIRE(report["images"].size() == 1);
  CHECK(fs::exists(report["images"][0]["path"].get<std::string>()));
}

TEST_CASE("mold run --threads sets every compute pool and says so once",
          "[mold][run][threads]") {
  TempDir out;
  // The BLAS's own pool follows (OpenBLAS would start one thread per logical
  // CPU), and OpenMP's threads sleep while they wait unless told otherwise.
  const auto r = run_mold(tiny_args(out, {"--threads", "3", "--json"}),
                          {{"OMP_WAIT_POLICY", kUnset}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report["threads"]["compute"] == 3);
  CHECK(report["threads"]["inter_op"] == 1);
  const auto blas = mold::loaded_blas_library();
  INFO("this process's BLAS: " << mold::to_string(blas.kind));
  if (blas.kind == mold::BlasLibrary::Kind::openblas)
    CHECK(report["threads"]["blas"] == 3);
  CHECK_THAT(r.err, Catch::Contains("mold run: 3 compute threads (libtorch 3"));
  CHECK_THAT(r.err, Catch::Contains("OMP_WAIT_POLICY=passive"));
  std::size_t lines = 0;
  for (auto at = r.err.find("compute thread"); at != std::string::npos;
       at = r.err.find("compute thread", at + 1))
    ++lines;
  CHECK(lines == 1);

  // A user's own policy stands.
  const auto active = run_mold(tiny_args(out, {"--threads", "1"}),
                               {{"OMP_WAIT_POLICY", "ACTIVE"}});
  INFO(active.err);
  REQUIRE(active.exit_code == 0);
  CHECK_THAT(active.err, Catch::Contains("1 compute thread (libtorch 1") &&
                             Catch::Contains("OMP_WAIT_POLICY=active"));

  // Out of range, or for a server's run: refused by name.
  const auto zero = run_mold(tiny_args(out, {"--threads", "0"}));
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Catch::Contains("--threads"));
  const auto remote = run_mold(tiny_args(out, {"--threads", "2"}),
                               {{"MOLD_HOST", "127.0.0.1:1"}});
  CHECK(remote.exit_code == 2);
  CHECK_THAT(remote.err, Catch::Contains("--threads is the server's") &&
                             Catch::Contains("--local"));
}

TEST_CASE("mold run computes on the CPUs it may run on unless told otherwise",
          "[mold][run][threads]") {
  TempDir out;
  const std::map<std::string, std::string> no_override = {
      {"OMP_NUM_THREADS", kUnset}};
  {
    // As under `taskset -c 0`: one CPU, one compute thread.
    const PinnedCpus one(1);
    const auto r = run_mold(tiny_args(out, {"--json"}), no_override);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto report = nlohmann::json::parse(r.out);
    CHECK(report["threads"]["compute"] == 1);
    CHECK_THAT(report["threads"]["source"].get<std::string>(),
               Catch::StartsWith("the CPUs this process may run on: 1 CPU "
                                 "in its affinity mask"));
    CHECK_THAT(r.err,
               Catch::Contains("mold run: 1 compute thread (") &&
                   Catch::Contains("), from the CPUs this process may "
                                   "run on: 1 CPU in its affinity mask"));
    const auto doctor =
        mold::test::run_molddiag({"doctor", "--json"}, no_override);
    INFO(doctor.err);
    REQUIRE(doctor.exit_code == 0);
    CHECK(nlohmann::json::parse(doctor.out)["libtorch"]["threads"] == 1);
  }
  {
    // Every CPU of the mask (capped by this machine's cgroup quota, if any):
    // 2 on a 2-CPU machine, where libtorch alone would take 1.
    const PinnedCpus two(2);
    const int expected = mold::usable_cpus().count();
    const auto r = run_mold(tiny_args(out, {"--json"}), no_override);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["threads"]["compute"] == expected);
  }
  // OMP_NUM_THREADS and --threads stay above the CPUs, and say so.
  const auto omp =
      run_mold(tiny_args(out, {"--json"}), {{"OMP_NUM_THREADS", "3"}});
  INFO(omp.err);
  REQUIRE(omp.exit_code == 0);
  CHECK(nlohmann::json::parse(omp.out)["threads"]["compute"] == 3);
  CHECK_THAT(omp.err, Catch::Contains("), from OMP_NUM_THREADS=3"));
  const auto flag =
      run_mold(tiny_args(out, {"--threads", "2"}), {{"OMP_NUM_THREADS", "3"}});
  CHECK_THAT(flag.err, Catch::Contains("mold run: 2 compute threads (") &&
                           Catch::Contains("), from --threads"));
}

TEST_CASE("mold run under a memory limit parks the text encoder and finishes",
          "[mold][run][cache]") {
  TempDir out;
  // A cpu memory limit under which the tiny Z-Image's three components cannot
  // all be resident with the decode's working memory (float32 weights: text
  // encoder 18.65 MiB, transformer 2.25 MiB, VAE 5.42 MiB; a 64x48 decode's
  // estimate 3.6 MiB), but each phase fits with its own component.
  const auto r = run_mold(tiny_args(out, {"--cpu-memory-limit", "26 MiB"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("parked text_encoder"));
  CHECK(fs::exists(fs::path(out.path()) / "z-image-turbo-0.png"));
}

TEST_CASE(
    "a quantized transformer's run parks the text encoder for the denoise "
    "when the limit asks for it, as a dense one's does",
    "[mold][run][cache][gguf]") {
  TempDir out;
  // The text encoder (18.65 MiB in float32) and the Q8_0 transformer (748
  // KiB) with the denoise's working memory do not fit in 20 MiB together;
  // each with its own does.
  const auto r =
      run_mold({"run", "z-image-turbo:q8", kPrompt, "--tiny", "--width", "64",
                "--height", "48", "--steps", "2", "--output", out.path(),
                "--cpu-memory-limit", "20 MiB"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matches("[\\s\\S]*denoise: start \\([^)]*parked "
                                   "text_encoder[\\s\\S]*"));
  CHECK(fs::exists(fs::path(out.path()) / "z-image-turbo-0.png"));
}

TEST_CASE(
    "mold run --batch encodes the prompt once: images 2..N reuse the "
    "embeddings, with the images of separate runs, and the text encoder "
    "parked under a limit is not loaded again",
    "[mold][run][batch][cache]") {
  TempDir out, single;
  auto r = run_mold(tiny_args(out, {"--seed", "3", "--batch", "3",
                                    "--cpu-memory-limit", "26 MiB", "--json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[1/3] text_encode: start") &&
                        Catch::Contains("[2/3] text_encode: reused (the "
                                        "embeddings of the last image with "
                                        "this prompt: ") &&
                        Catch::Contains("[3/3] text_encode: reused") &&
                        !Catch::Contains("[2/3] text_encode: start"));
  const auto report = nlohmann::json::parse(r.out);
  int encoded = 0, reused = 0;
  for (const auto& phase : report["phases"]) {
    if (phase["phase"] != "text_encode") continue;
    if (phase["status"] == "done") ++encoded;
    if (phase["status"] == "reused") {
      ++reused;
      CHECK(phase["load_seconds"] == 0);
      CHECK(phase["image"].get<int>() > 0);
    }
  }
  CHECK(encoded == 1);
  CHECK(reused == 2);
  // Loaded once: image 1 parked it for the transformer, and no later image
  // brought it back.
  const auto& last = report["phases"].back()["residency"];
  for (const auto& entry : last)
    if (entry.at("component") == "text_encoder") CHECK(entry.at("loads") == 1);
  // The third image is the one a run of its seed alone makes.
  r = run_mold(tiny_args(single, {"--seed", "5"}));
  REQUIRE(r.exit_code == 0);
  CHECK(mold::read_png(fs::path(single.path()) / "z-image-turbo-5.png").rgb ==
        mold::read_png(fs::path(out.path()) / "z-image-turbo-5.png").rgb);
}

TEST_CASE("every field of the request schema is a mold run option",
          "[mold][run][schema]") {
  const auto help = run_mold({"run", "--help"});
  REQUIRE(help.exit_code == 0);
  TempDir out;
  for (const mold::GenerateField& field : mold::generate_fields()) {
    const std::string flag = "--" + std::string(field.flag);
    INFO(flag);
    CHECK_THAT(help.out, Catch::Contains(flag));
    if (field.kind != mold::FieldKind::whole &&
        field.kind != mold::FieldKind::real)
      continue;
    // One past its range: refused by name, with the range, before a run.
    const std::string above = field.kind == mold::FieldKind::whole
                                  ? std::to_string(long(field.high) + 1)
                                  : std::to_string(field.high * 2);
    const auto r = run_mold({"run", "z-image-turbo", kPrompt, "--tiny",
                             "--output", out.path(), flag, above});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(flag) && Catch::Contains(above));
  }
}

TEST_CASE("mold run failures are clear and exit with their codes",
          "[mold][run][errors]") {
  TempDir out;
  SECTION("no weights: where it looked and what to do") {
    const auto r =
        run_mold({"run", "z-image-turbo", kPrompt, "--output", out.path()});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("--model-dir") &&
                          Catch::Contains("MOLD_MODELS_DIR") &&
                          Catch::Contains("--tiny"));
  }
  SECTION("a size the model cannot make") {
    const auto r = run_mold({"run", "z-image-turbo", kPrompt, "--tiny",
                             "--width", "50", "--output", out.path()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--width 50") &&
                          Catch::Contains("multiples of 16"));
  }
  SECTION("an unknown model lists the known ones") {
    const auto r = run_mold({"run", "no-such-model", kPrompt, "--tiny"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("no-such-model") &&
                          Catch::Contains("z-image-turbo"));
  }
  SECTION("an unknown variant lists the variants") {
    const auto r = run_mold({"run", "z-image-turbo:q1", kPrompt, "--tiny"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("z-image-turbo:bf16"));
  }
  SECTION("--output that is a file") {
    const std::string file = out.write("taken", "x");
    const auto r =
        run_mold({"run", "z-image-turbo", kPrompt, "--tiny", "--width", "32",
                  "--height", "32", "--steps", "1", "--output", file});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("not a directory"));
    CHECK_FALSE(r.err.find("terminate") != std::string::npos);
  }
  SECTION("--tiny with --model-dir: refused, not one of them ignored") {
    TempDir models;
    const std::string says =
        "--tiny runs seeded weights at the tiny architecture and reads no "
        "model folder, but --model-dir " +
        models.path() + " was given too";
    const auto run = run_mold(tiny_args(out, {"--model-dir", models.path()}));
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::Contains(says));
    const auto serve = run_mold(
        {"serve", "--tiny", "--model-dir", models.path(), "--port", "0"});
    CHECK(serve.exit_code == 2);
    CHECK_THAT(serve.err, Catch::Contains(says));
    const auto leak = mold::test::run_molddiag(
        {"leak", "z-image-turbo", "--tiny", "--model-dir", models.path()});
    CHECK(leak.exit_code == 2);
    CHECK_THAT(leak.err, Catch::Contains(says));
    CHECK(fs::is_empty(out.path()));
  }
  SECTION("a bad dtype") {
    const auto r = run_mold(tiny_args(out, {"--dtype", "int8"}));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--dtype 'int8': give float32, "
                                      "float16 or bfloat16"));
  }
  SECTION("values the request schema refuses: exit 2, nothing written") {
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{"--guidance", "nan"},
         "--guidance 'nan' is not a number from 0 to 100"},
        {{"--guidance", "-1"}, "--guidance '-1' is not a number from 0 to 100"},
        {{"--guidance", "1e999"}, "--guidance '1e999' is not a number"},
        {{"--dtype", ""}, "--dtype is empty"},
        {{"--batch", "0"}, "--batch '0' is out of range"},
        // The second image's seed would wrap to 0.
        {{"--seed", "18446744073709551615", "--batch", "2"},
         "--seed 18446744073709551615 with a batch of 2: the last image's "
         "seed would pass 18446744073709551615; give a seed of at most "
         "18446744073709551614"},
    };
    for (const auto& [extra, says] : cases) {
      INFO(says);
      const auto r = run_mold(tiny_args(out, extra));
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains(says));
    }
    CHECK(fs::is_empty(out.path()));
  }
  SECTION("a memory limit too small for any phase") {
    const auto r = run_mold(tiny_args(out, {"--cpu-memory-limit", "2 MiB"}));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("text_encode") ||
                          Catch::Contains("text_encoder"));
    // The whole device (the limit) is too small: never, not "retry later".
    CHECK_THAT(r.err, Catch::Contains("It will never fit on this device") &&
                          Catch::Contains("retrying will not help"));
    CHECK(fs::is_empty(out.path()));
  }
}

TEST_CASE("mold run --save-tensors writes the latents and the float image",
          "[mold][run]") {
  TempDir out;
  auto r = run_mold(tiny_args(out, {"--save-tensors"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto file = mold::SafetensorsFile::open(fs::path(out.path()) /
                                                "z-image-turbo-0.safetensors");
  CHECK(file.entry("latents").shape == std::vector<int64_t>{1, 16, 6, 8});
  CHECK(file.entry("image").shape == std::vector<int64_t>{1, 3, 48, 64});
  CHECK(file.metadata().at("seed") == "0");
  // The PNG is the float image rounded.
  const at::Tensor rgb = (file.tensor("image")[0] / 2 + 0.5)
                             .clamp(0, 1)
                             .mul(255)
                             .round()
                             .to(at::kByte)
                             .permute({1, 2, 0})
                             .contiguous();
  const auto png = mold::read_png(fs::path(out.path()) / "z-image-turbo-0.png");
  CHECK(std::vector<std::uint8_t>(rgb.data_ptr<std::uint8_t>(),
                                  rgb.data_ptr<std::uint8_t>() + rgb.numel()) ==
        png.rgb);
  // A second run never replaces either file.
  r = run_mold(tiny_args(out, {"--save-tensors"}));
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(fs::path(out.path()) / "z-image-turbo-0-2.safetensors"));
}
