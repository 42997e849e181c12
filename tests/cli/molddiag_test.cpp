// molddiag, run as the real binary.
#include <catch2/catch.hpp>
#include <mold/base/bytes.hpp>
#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

namespace {

mold::test::ProcessResult molddiag(
    const std::vector<std::string>& args,
    std::map<std::string, std::string> extra_env = {}) {
  static TempDir home;
  auto env = mold::test::isolated_env(home);
  for (auto& [k, v] : extra_env) env[k] = v;
  return run_process(kMolddiag, args, env);
}

std::string bad_dir(const std::string& name) {
  return std::string(mold::test::kBadPluginRoot) + "/" + name;
}

}  // namespace

TEST_CASE("molddiag plugins --json lists the four plugins and no errors",
          "[cli]") {
  const auto r = molddiag({"plugins", "--json", "--strict"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& p : j["plugins"]) names.push_back(p["name"]);
  for (const char* expected :
       {"core", "qwen_image", "zimage", "backend_cuda", "backend_metal"})
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  CHECK(j["errors"].empty());
  CHECK(j["core"]["build_id"].get<std::string>().rfind("mold-api 1;", 0) == 0);
}

TEST_CASE("molddiag plugins reports each broken plugin; --strict exits 3",
          "[cli]") {
  for (const char* kind :
       {"not_a_library", "no_entry_symbol", "null_info", "api_version_2",
        "struct_too_small", "build_id_mismatch", "null_register_all",
        "register_throws", "duplicate_estimator"}) {
    INFO(kind);
    const auto lenient = molddiag({"plugins", "--plugin-dir", bad_dir(kind)});
    CHECK(lenient.exit_code == 0);
    CHECK_THAT(lenient.out, Catch::Contains("load errors (1)"));

    const auto strict = molddiag(
        {"plugins", "--json", "--strict", "--plugin-dir", bad_dir(kind)});
    CHECK(strict.exit_code == 3);
    const auto j = nlohmann::json::parse(strict.out);
    REQUIRE(j["errors"].size() == 1);
    CHECK_FALSE(j["errors"][0]["message"].get<std::string>().empty());
  }
  const auto j = nlohmann::json::parse(
      molddiag({"plugins", "--json", "--plugin-dir", bad_dir("api_version_2")})
          .out);
  CHECK(j["errors"][0]["kind"] == "api_version_mismatch");
  CHECK_THAT(j["errors"][0]["message"].get<std::string>(),
             Catch::Contains("got 2, supported 1"));
}

TEST_CASE("MOLD_PLUGIN_PATH and the config's dirs are searched", "[cli]") {
  auto r = molddiag({"plugins", "--json"},
                    {{"MOLD_PLUGIN_PATH", bad_dir("api_version_2")}});
  CHECK(nlohmann::json::parse(r.out)["errors"].size() == 1);
  TempDir dir;
  const auto config = dir.write(
      "c.toml", "[plugins]\ndirs = [\"" + bad_dir("null_info") + "\"]\n");
  r = molddiag({"plugins", "--json", "--config", config});
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["errors"].size() == 1);
  CHECK(j["errors"][0]["kind"] == "null_info");
}

TEST_CASE("molddiag estimate answers the documented cuda decode", "[cli]") {
  const auto r = molddiag({"estimate", "--family", "qwen_image", "--op",
                           "vae_decode", "--backend", "cuda", "--width", "1248",
                           "--height", "832", "--dtype", "float16", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["bytes"].get<unsigned long long>() == 1248ull * 832 * 2 * 2900);
  CHECK(j["calibrated"] == true);
  CHECK(j["estimator"] == "qwen_image/vae_decode/cuda");
  CHECK_THAT(j["source"].get<std::string>(), Catch::Contains("seed 004"));

  const auto text =
      molddiag({"estimate", "--family", "zimage", "--op", "vae_encode",
                "--backend", "metal", "--width", "512", "--height", "512"});
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("calibrated: no"));
  CHECK_THAT(text.out, Catch::Contains(std::to_string(512ull * 512 * 2 * 1100) +
                                       " bytes"));
}

TEST_CASE("molddiag usage errors exit 2 and say what to fix", "[cli]") {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{}, "usage: molddiag"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"estimate", "--op", "vae_decode"}, "is required but missing"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "wide", "--height", "8"},
       "--width"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "0", "--height", "8"},
       "width is 0"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "8", "--height", "8", "--dtype", "fp13"},
       "unknown dtype 'fp13'"},
      {{"plugins", "--cpu-memory-limit", "lots"}, "--cpu-memory-limit 'lots'"},
      {{"plugins", "--bogus"}, "bogus"},
  };
  for (const auto& c : cases) {
    const auto r = molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err + r.out, Catch::Contains(c.message));
  }
}

TEST_CASE("molddiag failures exit 1 with the reason", "[cli]") {
  auto r = molddiag({"estimate", "--family", "sdxl", "--op", "vae_decode",
                     "--backend", "cuda", "--width", "8", "--height", "8"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("no family 'sdxl'"));
  TempDir dir;
  const auto config = dir.write("bad.toml", "[plugins]\ndirs = 3\n");
  r = molddiag({"plugins", "--config", config});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains(config + ":2: key 'plugins.dirs'"));
}

TEST_CASE("molddiag --help and --version", "[cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"plugins", "--help"}, {"estimate", "--help"}}) {
    const auto r = molddiag(args);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(r.out.empty());
  }
  const auto v = molddiag({"--version"});
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("molddiag 0.1.0"));
}

TEST_CASE("molddiag classify: JSON fields, remote label, exit codes",
          "[cli][oom]") {
  const std::string text =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.01 GiB. "
      "GPU 0 has a "
      "total capacity of 44.98 GiB of which 3.69 GiB is free. Of the allocated "
      "memory 38.12 "
      "GiB is allocated by PyTorch, and 2.48 GiB is reserved by PyTorch but "
      "unallocated.";
  const auto r = molddiag({"classify", "--json", "--remote", "gpu-box:7680",
                           "--remote-backend", "cuda", "--remote-device",
                           "NVIDIA H200", text});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["is_oom"] == true);
  CHECK(j["backend"] == "cuda");
  CHECK(j["origin"]["kind"] == "remote");
  CHECK(j["origin"]["host"] == "gpu-box:7680");
  CHECK(j["requested_bytes"] == mold::parse_bytes("5.01 GiB"));
  CHECK(j["capacity_bytes"] == mold::parse_bytes("44.98 GiB"));
  CHECK(j["free_bytes"] == mold::parse_bytes("3.69 GiB"));
  CHECK(j["reserved_unallocated_bytes"] == mold::parse_bytes("2.48 GiB"));
  CHECK(j["fragmentation"] == false);
  CHECK(j["label"] ==
        "Remote server out of memory on gpu-box:7680 (CUDA, NVIDIA H200)");
  CHECK_FALSE(j["hints"].empty());
  CHECK(j["message"].get<std::string>().rfind(
            "torch.OutOfMemoryError: CUDA out of memory", 0) == 0);

  // Multi-line text on stdin, with a backtrace that is stripped from the
  // message.
  static TempDir home;
  auto env = mold::test::isolated_env(home);
  const auto piped =
      run_process(kMolddiag, {"classify", "--json", "--backend", "cpu"}, env,
                  "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. "
                  "DefaultCPUAllocator: can't "
                  "allocate memory: you tried to allocate 132426121216 bytes.\n"
                  "Exception raised from alloc_cpu at "
                  "../c10/core/impl/alloc_cpu.cpp:75 (most recent call "
                  "first):\nframe #0: c10::Error::Error() + 0x57\n");
  REQUIRE(piped.exit_code == 0);
  const auto p = nlohmann::json::parse(piped.out);
  CHECK(p["backend"] == "cpu");
  CHECK(p["requested_bytes"] == 132426121216ull);
  CHECK(p["message"].get<std::string>().find("frame #0") == std::string::npos);

  const auto not_oom = molddiag(
      {"classify", "--json",
       "RuntimeError: CUDA error: an illegal memory access was encountered"});
  CHECK(not_oom.exit_code == 1);
  CHECK(nlohmann::json::parse(not_oom.out)["is_oom"] == false);

  const auto text_out = molddiag({"classify", "--family", "qwen_image", "--op",
                                  "vae_decode", "--width", "2048", "--height",
                                  "2048", "--backend", "cuda", text});
  CHECK(text_out.exit_code == 0);
  CHECK_THAT(text_out.out, Catch::StartsWith("CUDA out of memory on GPU 0\n"));
  CHECK_THAT(text_out.out, Catch::Contains("this decode needs ~22.66 GiB"));
}

TEST_CASE("molddiag classify usage errors exit 2", "[cli][oom]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"classify", "--remote-backend", "cuda", "x out of memory"},
           {"classify", "--remote", "h:1", "--backend", "cuda",
            "x out of memory"},
           {"classify", "--family", "qwen_image", "--width", "0",
            "x out of memory"},
           {"classify", "   "},
       }) {
    const auto r = molddiag(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(r.err.empty());
  }
}
