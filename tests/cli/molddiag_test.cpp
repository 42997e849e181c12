// molddiag, run as the real binary.
#include <catch2/catch.hpp>
#include <mold/base/bytes.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::kMolddiag;
using mold::test::run_process;
using mold::test::TempDir;

using mold::test::run_molddiag;

namespace {

std::string bad_dir(const std::string& name) {
  return std::string(mold::test::kBadPluginRoot) + "/" + name;
}

/// molddiag's commands, in the order of its command table.
const std::vector<std::string> kCommands = {
    "plugins", "estimate",  "history",       "classify", "vae",
    "tiling",  "calibrate", "run-component", "tokenize", "inspect",
    "leak",    "parity",    "report",        "doctor"};

/// The usage hint that follows a usage error of `command`.
std::string help_hint(const std::string& command) {
  return "Run 'molddiag " + command + " --help' for its options.\n";
}

}  // namespace

TEST_CASE("molddiag plugins --json lists the four plugins and no errors",
          "[cli]") {
  const auto r = run_molddiag({"plugins", "--json", "--strict"});
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

TEST_CASE("molddiag plugins reports each broken plugin and --strict exits 3",
          "[cli]") {
  for (const char* kind :
       {"not_a_library", "no_entry_symbol", "null_info", "api_version_2",
        "struct_too_small", "build_id_mismatch", "null_register_all",
        "register_throws", "duplicate_estimator"}) {
    INFO(kind);
    const auto lenient =
        run_molddiag({"plugins", "--plugin-dir", bad_dir(kind)});
    CHECK(lenient.exit_code == 0);
    CHECK_THAT(lenient.out, Catch::Contains("load errors (1)"));

    const auto strict = run_molddiag(
        {"plugins", "--json", "--strict", "--plugin-dir", bad_dir(kind)});
    CHECK(strict.exit_code == 3);
    const auto j = nlohmann::json::parse(strict.out);
    REQUIRE(j["errors"].size() == 1);
    CHECK_FALSE(j["errors"][0]["message"].get<std::string>().empty());
  }
  const auto j =
      nlohmann::json::parse(run_molddiag({"plugins", "--json", "--plugin-dir",
                                          bad_dir("api_version_2")})
                                .out);
  CHECK(j["errors"][0]["kind"] == "api_version_mismatch");
  CHECK_THAT(j["errors"][0]["message"].get<std::string>(),
             Catch::Contains("got 2, supported 1"));
}

TEST_CASE("MOLD_PLUGIN_PATH and the config's dirs are searched", "[cli]") {
  auto r = run_molddiag({"plugins", "--json"},
                        {{"MOLD_PLUGIN_PATH", bad_dir("api_version_2")}});
  CHECK(nlohmann::json::parse(r.out)["errors"].size() == 1);
  TempDir dir;
  const auto config = dir.write(
      "c.toml", "[plugins]\ndirs = [\"" + bad_dir("null_info") + "\"]\n");
  r = run_molddiag({"plugins", "--json", "--config", config});
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["errors"].size() == 1);
  CHECK(j["errors"][0]["kind"] == "null_info");
}

TEST_CASE("molddiag estimate answers the documented cuda decode", "[cli]") {
  const auto r =
      run_molddiag({"estimate", "--family", "qwen_image", "--op", "vae_decode",
                    "--backend", "cuda", "--width", "1248", "--height", "832",
                    "--dtype", "float16", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["bytes"].get<unsigned long long>() == 1248ull * 832 * 2 * 2900);
  CHECK(j["calibrated"] == true);
  CHECK(j["estimator"] == "qwen_image/vae_decode/cuda");
  CHECK_THAT(j["source"].get<std::string>(), Catch::Contains("seed 004"));

  const auto text =
      run_molddiag({"estimate", "--family", "zimage", "--op", "vae_encode",
                    "--backend", "metal", "--width", "512", "--height", "512"});
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("calibrated: no"));
  CHECK_THAT(text.out, Catch::Contains(std::to_string(512ull * 512 * 2 * 1100) +
                                       " bytes"));
}

TEST_CASE("molddiag estimate --quantized adds the dequantization buffer",
          "[cli]") {
  const auto estimate = [](bool quantized) {
    std::vector<std::string> args = {
        "estimate", "--family",  "qwen_image", "--op",     "denoise", "--width",
        "256",      "--height",  "256",        "--tokens", "200",     "--dtype",
        "bfloat16", "--backend", "cpu",        "--json"};
    if (quantized) args.push_back("--quantized");
    const auto r = run_molddiag(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto dense = estimate(false), q4 = estimate(true);
  CHECK(dense["quantized"] == false);
  CHECK(q4["quantized"] == true);
  nlohmann::json term;
  for (const auto& t : q4["terms"])
    if (t["name"] == "dequantized_weights") term = t;
  // On the cpu the modulation (6 x 3072 by 3072, a row per image) is
  // multiplied from its blocks: the buffer is the image feed-forward's,
  // 4 x 3072 by 3072 in bfloat16.
  REQUIRE(term.is_object());
  CHECK(term["bytes"] == 4ull * 3072 * 3072 * 2);
  CHECK_THAT(term["detail"].get<std::string>(), Catch::Contains("img_mlp"));
  // Counted exactly: added as it is, outside the headroom.
  CHECK(q4["bytes"].get<double>() ==
        dense["bytes"].get<double>() + 4.0 * 3072 * 3072 * 2);
}

TEST_CASE("molddiag usage errors exit 2 and say what to fix", "[cli]") {
  // No command: the usage on stdout. An unknown command: named, then the
  // usage, on stderr.
  auto r = run_molddiag({});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::StartsWith("usage: molddiag <command> [options]\n"));
  r = run_molddiag({"frobnicate"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("molddiag: unknown command 'frobnicate'\n"
                                      "\nusage: molddiag <command>"));

  // A bad flag or value: the command, the message naming the flag or value,
  // and the hint to the command's help; nothing on stdout.
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"estimate", "--op", "vae_decode"},
       "the option '--backend' is required but missing"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "wide", "--height", "8"},
       "--width 'wide' is not a whole number: give a whole number from 1 to "
       "65536"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "0", "--height", "8"},
       "--width '0' is out of range: give a whole number from 1 to 65536"},
      {{"estimate", "--family", "qwen_image", "--op", "vae_decode", "--backend",
        "cuda", "--width", "8", "--height", "8", "--dtype", "fp13"},
       "unknown dtype 'fp13'"},
      {{"estimate", "--bogus"}, "unrecognised option '--bogus'"},
      {{"plugins", "--cpu-memory-limit", "lots"},
       "--cpu-memory-limit 'lots' is not a byte count"},
      {{"plugins", "--bogus"}, "unrecognised option '--bogus'"},
  };
  for (const auto& c : cases) {
    r = run_molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    const std::string& command = c.args.front();
    CHECK_THAT(r.err,
               Catch::StartsWith("molddiag " + command + ": " + c.message));
    CHECK_THAT(r.err, Catch::EndsWith(help_hint(command)));
  }
}

TEST_CASE("molddiag failures exit 1 with the reason", "[cli]") {
  auto r = run_molddiag({"estimate", "--family", "sdxl", "--op", "vae_decode",
                         "--backend", "cuda", "--width", "8", "--height", "8"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("molddiag estimate: no family 'sdxl'"));
  CHECK_THAT(r.err, !Catch::Contains("--help"));  // not a usage error
  TempDir dir;
  const auto config = dir.write("bad.toml", "[plugins]\ndirs = 3\n");
  r = run_molddiag({"plugins", "--config", config});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains(config + ":2: key 'plugins.dirs'"));
}

TEST_CASE("molddiag's usage lists every command of its table", "[cli]") {
  const auto r = run_molddiag({"--help"});
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith(
                        "usage: molddiag <command> [options]\n\ncommands:\n"));
  CHECK_THAT(
      r.out,
      Catch::EndsWith("\nRun 'molddiag <command> --help' for a command's "
                      "options.\nOptions of every command: --plugin-dir DIR, "
                      "--config FILE, --cpu-memory-limit BYTES, --no-scan.\n"));
  // The command lines: "  NAME  summary", from "commands:" to the empty line.
  std::vector<std::string> listed;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line) && line != "commands:") {
  }
  while (std::getline(lines, line) && !line.empty()) {
    REQUIRE(line.rfind("  ", 0) == 0);
    const auto end = line.find(' ', 2);
    REQUIRE(end != std::string::npos);
    listed.push_back(line.substr(2, end - 2));
    CHECK(line.find_first_not_of(' ', end) != std::string::npos);  // a summary
  }
  CHECK(listed == kCommands);
  // Every listed command is one molddiag runs.
  for (const auto& command : listed) {
    INFO(command);
    const auto help = run_molddiag({command, "--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Catch::StartsWith("molddiag " + command + " "));
  }
  // The same text for every way of asking, and on no arguments (exit 2).
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"-h"}, {"help"}, {}}) {
    const auto again = run_molddiag(args);
    CHECK(again.exit_code == (args.empty() ? 2 : 0));
    CHECK(again.out == r.out);
  }
}

TEST_CASE("molddiag <command> --help lists the command's own options",
          "[cli]") {
  struct Case {
    std::string command;
    std::vector<std::string> flags;
  };
  const Case cases[] = {
      {"plugins", {"--json", "--strict"}},
      {"estimate",
       {"--family", "--op", "--backend", "--width", "--height", "--dtype",
        "--batch", "--frames", "--tile", "--model", "--json", "--device",
        "--table-only"}},
      {"history",
       {"--dir", "--device", "--prune", "--model", "--op", "--by",
        "--older-than", "--json"}},
      {"classify",
       {"--backend", "--remote", "--remote-backend", "--remote-device",
        "--family", "--model", "--op", "--width", "--height", "--batch",
        "--dtype", "--json"}},
      {"vae",
       {"--family", "--weights", "--input", "--output", "--mode", "--backend",
        "--arch", "--seed", "--tile", "--overlap", "--blend", "--workspace",
        "--raw-latent", "--json"}},
      {"tiling",
       {"--family", "--size", "--tile", "--overlap", "--arch", "--seed",
        "--workspace", "--mkldnn", "--json"}},
      {"calibrate",
       {"--family", "--op", "--sizes", "--tokens", "--arch", "--headroom",
        "--write", "--json", "--backend", "--from-history"}},
      {"run-component",
       {"--family", "--component", "--arch", "--weights", "--input", "--output",
        "--dtype", "--seed", "--json", "--verbose"}},
      {"tokenize", {"--family", "--tokenizer", "--chat", "--json", "--text"}},
      {"inspect", {"--file", "--arch", "--json"}},
      {"leak",
       {"--model",     "--tiny",           "--model-dir",  "--dtype",
        "--backend",   "--prompt",         "--images",     "--width",
        "--height",    "--steps",          "--seed",       "--quiet",
        "--threshold", "--host-threshold", "--max-warmup", "--tolerance",
        "--slack",     "--json",           "--report",     "--html",
        "--pid",       "--each",           "--settle",     "--timeout"}},
      {"parity",
       {"--model", "--tiny", "--images", "--tolerance", "--slack", "--json",
        "--report", "--html"}},
      {"report",
       {"--input", "--threshold", "--host-threshold", "--max-warmup",
        "--tolerance", "--slack", "--json", "--html"}},
      {"doctor",
       {"--json", "--strict", "--no-gemm", "--gemm-rows", "--gemm-in",
        "--gemm-out"}},
  };
  const std::vector<std::string> every_command = {"--plugin-dir", "--config",
                                                  "--cpu-memory-limit"};
  std::vector<std::string> covered;
  for (const auto& c : cases) {
    covered.push_back(c.command);
    for (const std::string help : {"--help", "-h"}) {
      INFO(c.command << " " << help);
      const auto r = run_molddiag({c.command, help});
      INFO(r.out);
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      CHECK_THAT(r.out, Catch::StartsWith("molddiag " + c.command + " "));
      CHECK_THAT(r.out, Catch::Contains("\n  -h [ --help ] "));
      // Each option's line: two spaces, the flag, a space.
      for (const auto& flag : c.flags)
        CHECK_THAT(r.out, Catch::Contains("\n  " + flag + " "));
      for (const auto& flag : every_command)
        CHECK_THAT(r.out, Catch::Contains("\n  " + flag + " "));
    }
  }
  CHECK(covered == kCommands);
  // estimate answers --help before checking its required options.
  const auto r = run_molddiag({"estimate", "--family", "qwen_image", "--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\n  --backend "));
}

TEST_CASE("molddiag --version", "[cli]") {
  const auto v = run_molddiag({"--version"});
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("molddiag 0.1.0 (mold-api 1;"));
  CHECK_THAT(v.out, Catch::EndsWith(")\n"));
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
  const auto r = run_molddiag({"classify", "--json", "--remote", "gpu-box:7680",
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

  const auto not_oom = run_molddiag(
      {"classify", "--json",
       "RuntimeError: CUDA error: an illegal memory access was encountered"});
  CHECK(not_oom.exit_code == 1);
  CHECK(nlohmann::json::parse(not_oom.out)["is_oom"] == false);

  const auto text_out = run_molddiag(
      {"classify", "--family", "qwen_image", "--op", "vae_decode", "--width",
       "2048", "--height", "2048", "--backend", "cuda", text});
  CHECK(text_out.exit_code == 0);
  CHECK_THAT(text_out.out, Catch::StartsWith("CUDA out of memory on GPU 0\n"));
  CHECK_THAT(text_out.out, Catch::Contains("this decode needs ~22.66 GiB"));
}

TEST_CASE("molddiag classify usage errors exit 2 and name the flags",
          "[cli][oom]") {
  struct Case {
    std::vector<std::string> args;
    std::vector<const char*> messages;
  };
  const Case cases[] = {
      {{"classify", "--remote-backend", "cuda", "x out of memory"},
       {"molddiag classify: --remote-backend and --remote-device describe a "
        "--remote HOST: add it"}},
      {{"classify", "--remote", "h:1", "--backend", "cuda", "x out of memory"},
       {"molddiag classify: give --backend (a local error) or --remote (a "
        "server's error), not both"}},
      {{"classify", "--family", "qwen_image", "--width", "64",
        "x out of memory"},
       {"molddiag classify: the workload options: ", "workload op is empty",
        "(give --family, --op, --width and --height together)"}},
      {{"classify", "   "},
       {"molddiag classify: no error text: give it as arguments or on standard "
        "input"}},
      {{"classify", "--width", "wide", "x out of memory"},
       {"molddiag classify: --width 'wide' is not a whole number: give a "
        "whole number from 1 to 65536"}},
  };
  for (const auto& c : cases) {
    const auto r = run_molddiag(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    for (const char* message : c.messages)
      CHECK_THAT(r.err, Catch::Contains(message));
    CHECK_THAT(r.err, Catch::EndsWith(help_hint("classify")));
  }
}
