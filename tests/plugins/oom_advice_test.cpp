// Labels and hints: the origin decides, numbers come from the estimators,
// families add their own.
#include <catch2/catch.hpp>
#include <mold/plugin/oom_advice.hpp>

#include "support/test_registry.hpp"

using namespace mold;

namespace {

const std::string kSeed000Text =
    "CUDA out of memory. Tried to allocate 5.01 GiB. GPU 0 has a total "
    "capacity of 44.98 GiB "
    "of which 3.69 GiB is free. Including non-PyTorch memory, this process has "
    "41.20 GiB "
    "memory in use. Of the allocated memory 38.12 GiB is allocated by PyTorch, "
    "and 2.48 GiB "
    "is reserved by PyTorch but unallocated.";

Workload edit_encode(int batch) {
  Workload w;
  w.family = "qwen_image";
  w.model = "qwen-image-edit-2511:q4";
  w.op = "vae_encode";
  w.backend = "cuda";
  w.width = 1248;
  w.height = 832;
  w.batch = batch;
  return w;
}

bool any_contains(const std::vector<std::string>& hints,
                  const std::string& needle) {
  for (const auto& h : hints)
    if (h.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "incident 1 (docs/incidents.md): a remote CUDA OOM seen from a Mac client "
    "never says Metal",
    "[oom][advice]") {
  const Registry& registry = mold::test::real_plugins();
  // The client runs on a Mac (its own backend would be metal); the error came
  // from the server, whose status says CUDA on an H200.
  const Origin server{Origin::Kind::remote, "gpu-box:7680", "cuda",
                      "NVIDIA H200"};
  for (const std::string& text :
       {kSeed000Text,
        std::string(
            "DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")")}) {
    INFO(text);
    const auto report = registry.classify({text, "", server});
    REQUIRE(report);
    const std::string label = oom_label(*report);
    CHECK(label ==
          "Remote server out of memory on gpu-box:7680 (CUDA, NVIDIA H200)");
    CHECK(label.find("Metal") == std::string::npos);
    const Workload w = edit_encode(5);
    const auto hints = advise(registry, *report, &w);
    for (const auto& h : hints) {
      INFO(h);
      CHECK(h.find("Metal") == std::string::npos);
      CHECK(h.find("--width") == std::string::npos);  // local resolution advice
    }
    CHECK(any_contains(hints, "on the server (gpu-box:7680)"));
    CHECK(any_contains(hints, "reduce --batch (now 5)"));
    CHECK(any_contains(hints, "--local"));
    CHECK(any_contains(hints, "unload other models"));
  }
  const auto report = registry.classify({kSeed000Text, "", server});
  const Workload w = edit_encode(1);
  const auto hints = advise(registry, *report, &w);
  // The encode's own estimate against the server's free memory.
  CHECK(any_contains(
      hints, "this encode needs ~" + format_bytes(1248ull * 832 * 2 * 1600) +
                 " of working memory; 3.69 GiB is free on the server"));
  // The server sees one image per request (the incident's client sent one
  // request per image of its --batch 5): it cannot know the batch was 1.
  CHECK_FALSE(any_contains(hints, "reduce --batch (now"));
  CHECK(any_contains(hints,
                     "if this was one image of a --batch, reduce --batch"));
  // With no workload at all the hint stands too.
  CHECK(any_contains(advise(registry, *report, nullptr),
                     "if this was one image of a --batch, reduce --batch"));
}

TEST_CASE(
    "candle's CUDA_ERROR_OUT_OF_MEMORY on a local Metal device is a Metal OOM",
    "[oom][advice]") {
  Origin local;
  local.backend = "metal";
  local.device_name = "Apple M3 Max";
  const auto report = mold::test::real_plugins().classify(
      {"Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")", "",
       local});
  REQUIRE(report);
  CHECK(report->backend == "metal");
  CHECK(oom_label(*report) == "Metal out of memory on Apple M3 Max");
}

TEST_CASE(
    "local hints carry numbers: a size that fits, tiles, smaller variants",
    "[oom][advice]") {
  const Registry& registry = mold::test::real_plugins();
  const auto report = registry.classify(
      {"CUDA out of memory. Tried to allocate 5.01 GiB. GPU 0 has a total "
       "capacity of 23.99 "
       "GiB of which 3.69 GiB is free. Of the allocated memory 16.12 GiB is "
       "allocated by "
       "PyTorch, and 1.48 GiB is reserved by PyTorch but unallocated.",
       "",
       {}});
  REQUIRE(report);
  CHECK(oom_label(*report) == "CUDA out of memory on GPU 0");
  Workload w;
  w.family = "qwen_image";
  w.model = "qwen-image-edit-2511";
  w.op = "vae_decode";
  w.backend = "cuda";
  w.width = w.height = 2048;
  const auto hints = advise(registry, *report, &w);
  CHECK(any_contains(
      hints,
      "this decode needs ~22.66 GiB of working memory; 3.69 GiB is free "
      "on this machine"));
  // 768x768 x 2 B x 2900 = 3.19 GiB fits in 3.69 GiB; 832x832 would not.
  CHECK(any_contains(hints, "--width 768 --height 768 fits the 3.69 GiB free"));
  CHECK(any_contains(
      hints,
      "decode in tiles of 64 latents (512 px): one tile needs ~1.42 GiB"));
  CHECK(any_contains(hints, "use a smaller variant: qwen-image-edit-2511:q8"));
  CHECK(any_contains(hints, "resize the source image"));
  CHECK_FALSE(any_contains(hints, "--local"));
}

TEST_CASE("fragmentation hints fit the backend", "[oom][advice]") {
  const Registry& registry = mold::test::real_plugins();
  const std::string text =
      "CUDA out of memory. Tried to allocate 5.01 GiB. GPU 0 has a total "
      "capacity of 44.98 GiB "
      "of which 3.69 GiB is free. Of the allocated memory 30.1 GiB is "
      "allocated by PyTorch, "
      "and 9.50 GiB is reserved by PyTorch but unallocated.";
  auto cuda = registry.classify({text, "", {}});
  REQUIRE(cuda);
  CHECK(cuda->fragmentation);
  CHECK(any_contains(advise(registry, *cuda, nullptr),
                     "expandable_segments:True"));
  Origin rocm;
  rocm.backend = "rocm";
  auto amd = registry.classify({text, "", rocm});
  REQUIRE(amd);
  CHECK(amd->backend == "rocm");
  const auto hints = advise(registry, *amd, nullptr);
  CHECK(any_contains(hints,
                     "expandable_segments did not help (docs/incidents.md)"));
  CHECK_FALSE(any_contains(hints, "PYTORCH_CUDA_ALLOC_CONF"));
}

TEST_CASE("MPS, cpu limit and other-process hints", "[oom][advice]") {
  const Registry& registry = mold::test::real_plugins();
  auto mps = registry.classify(
      {"MPS backend out of memory (MPS allocated: 9.57 GiB, other allocations: "
       "17.35 GiB, max "
       "allowed: 27.20 GiB). Tried to allocate 292.50 MiB on private pool.",
       "",
       {}});
  REQUIRE(mps);
  auto hints = advise(registry, *mps, nullptr);
  CHECK(any_contains(hints, "PyTorch caps MPS at 27.20 GiB"));
  CHECK(any_contains(hints, "17.35 GiB of other allocations"));

  auto cpu =
      registry.classify({"CPU out of memory. Tried to allocate 64.00 MiB. "
                         "Limit 1.00 GiB, of which 12.00 MiB is "
                         "free.",
                         "",
                         {}});
  REQUIRE(cpu);
  CHECK(oom_label(*cpu) == "CPU out of memory");
  CHECK(any_contains(advise(registry, *cpu, nullptr), "--cpu-memory-limit"));

  auto shared =
      registry.classify({"CUDA out of memory. Tried to allocate 2.00 GiB. GPU "
                         "0 has a total capacity of 23.99 GiB "
                         "of which 1.00 GiB is free. Process 11 has 12.00 GiB "
                         "memory in use. Including "
                         "non-PyTorch memory, this process has 10.99 GiB "
                         "memory in use. Of the allocated memory "
                         "10.00 GiB is allocated by PyTorch, and 100.00 MiB is "
                         "reserved by PyTorch but "
                         "unallocated.",
                         "",
                         {}});
  REQUIRE(shared);
  CHECK(shared->other_processes == parse_bytes("23.99 GiB") -
                                       parse_bytes("1.00 GiB") -
                                       parse_bytes("10.99 GiB"));
  CHECK(any_contains(advise(registry, *shared, nullptr),
                     "used by other processes"));
}

TEST_CASE("labels for every backend name", "[oom][advice]") {
  OomReport r;
  r.backend = "unknown";
  CHECK(oom_label(r) == "Out of memory");
  r.backend = "rocm";
  r.device = "GPU 1";
  CHECK(oom_label(r) == "ROCm out of memory on GPU 1");
  r.origin = {Origin::Kind::remote, "studio.local:7680", "", ""};
  r.backend = "mps";
  r.device.clear();
  CHECK(oom_label(r) ==
        "Remote server out of memory on studio.local:7680 (MPS)");
  CHECK(backend_display_name("xpu") == "XPU");
  CHECK(backend_display_name("") == "unknown backend");
}
