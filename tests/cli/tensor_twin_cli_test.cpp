// mold and molddiag link no libtorch: they run what computes no tensors,
// answer every help and usage error, and hand a good command line that
// computes to mold-torch or molddiag-torch by exec
// (tools/common/tensor_twin.hpp).
// Which libraries a run loaded is read from the dynamic loader's own log
// (LD_DEBUG=files), one file per process.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"

using Catch::Matchers::Contains;
using mold::test::TempDir;

namespace {

using Runner = mold::test::ProcessResult (*)(
    const std::vector<std::string>&, const std::map<std::string, std::string>&);

/// `run` (run_mold or run_molddiag) with `args` and the loader logging into
/// `dir`; returns the result and, in `log`, every process's log together.
mold::test::ProcessResult logged_run(Runner run,
                                     const std::vector<std::string>& args,
                                     const TempDir& dir, std::string& log) {
  const auto result = run(
      args, {{"LD_DEBUG", "files"}, {"LD_DEBUG_OUTPUT", dir.path() + "/ld"}});
  std::ostringstream all;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().filename().string().rfind("ld.", 0) == 0)
      all << std::ifstream(entry.path()).rdbuf();
  log = all.str();
  return result;
}

mold::test::ProcessResult molddiag_logged(const std::vector<std::string>& args,
                                          const TempDir& dir,
                                          std::string& log) {
  return logged_run(mold::test::run_molddiag, args, dir, log);
}

}  // namespace

TEST_CASE("molddiag answers what computes no tensors without loading libtorch",
          "[cli][twin]") {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  for (const Case& c : std::vector<Case>{
           {{"estimate", "--family", "zimage", "--op", "denoise", "--backend",
             "cpu", "--width", "256", "--height", "256", "--tokens", "16"},
            0},
           {{"plugins", "--json"}, 0},
           {{"tokenize", "--family", "zimage", "a red fox"}, 0},
           // leak and parity parse and check here; only a run goes to the twin
           {{"leak", "z-image-turbo", "--tiny", "--images", "0"}, 2},
           {{"parity", "--help"}, 0},
           // a tensor command's help and usage errors are answered here
           {{"vae", "--help"}, 0},
           {{"vae", "decode", "--family", "zimage"}, 2},
           {{"calibrate", "--family", "zimage", "--op", "vae_decode", "--sizes",
             "12"},
            2},
           {{"tiling", "--family", "zimage", "--size", "100"}, 2},
           {{"run-component", "--family", "zimage"}, 2},
           {{"doctor", "--gemm-rows", "0"}, 2}}) {
    INFO(c.args.front() << " " << c.args.back());
    TempDir dir;
    std::string log;
    const auto r = molddiag_logged(c.args, dir, log);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    REQUIRE_THAT(log, Contains("libmold_core"));  // the log is there
    CHECK(log.find("libtorch_cpu") == std::string::npos);
  }
}

TEST_CASE("molddiag parity hands a local run to molddiag-torch",
          "[cli][twin]") {
  TempDir dir;
  std::string log;
  const auto r = molddiag_logged(
      {"parity", "z-image-turbo", "--tiny", "--images", "2", "--width", "64",
       "--height", "64", "--steps", "1", "--quiet", "--json"},
      dir, log);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("\"parity\""));
  CHECK_THAT(log, Contains("libtorch_cpu"));
}

TEST_CASE("molddiag hands a tensor command to molddiag-torch", "[cli][twin]") {
  TempDir dir;
  std::string log;
  const auto r = molddiag_logged({"doctor", "--no-gemm"}, dir, log);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("libtorch"));
  // The same process (exec keeps the pid, so one log) loaded libtorch: the
  // twin's doing, as the first test shows molddiag does not.
  CHECK_THAT(log, Contains("libtorch_cpu"));
  CHECK_THAT(log, Contains("libmold_torch"));
}

TEST_CASE("molddiag without its twin says which file and what to do",
          "[cli][twin]") {
  // A copy of molddiag where no libexec/mold/molddiag-torch is beside it.
  TempDir dir;
  const std::filesystem::path bin = std::filesystem::path(dir.path()) / "bin";
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file(mold::test::kMolddiag, bin / "molddiag");
  const std::string copy = (bin / "molddiag").string();

  const auto env = mold::test::isolated_env(dir);
  const auto tensors =
      mold::test::run_process(copy, {"doctor", "--no-gemm"}, env);
  CHECK(tensors.exit_code == 1);
  CHECK(tensors.out.empty());
  CHECK_THAT(tensors.err,
             Contains("molddiag: this command computes with libtorch, in " +
                      dir.path() +
                      "/libexec/mold/molddiag-torch, which could "
                      "not be run (No such file or directory): "
                      "reinstall mold"));

  // What needs no tensors still runs.
  const auto light =
      mold::test::run_process(copy, {"classify", "--json"}, env,
                              "CUDA out of memory. Tried to allocate 2.00 GiB");
  INFO(light.err);
  CHECK(light.exit_code == 0);
}

TEST_CASE(
    "mold answers help, usage errors and a server's runs without libtorch",
    "[cli][twin]") {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  for (const Case& c : std::vector<Case>{
           {{"--help"}, 0},
           {{"run", "--help"}, 0},
           {{"run", "z-image-turbo"}, 2},
           {{"run", "z-image-turbo", "a fox", "--width", "0"}, 2},
           // a run on a server goes from mold itself: here nothing listens
           {{"run", "z-image-turbo", "a fox", "--tiny", "--host",
             "127.0.0.1:1"},
            1}}) {
    INFO(c.args.front() << " " << c.args.back());
    TempDir dir;
    std::string log;
    const auto r = logged_run(mold::test::run_mold, c.args, dir, log);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    REQUIRE_THAT(log, Contains("libmold_core"));
    CHECK(log.find("libtorch_cpu") == std::string::npos);
  }
}

TEST_CASE("mold hands a run here and mold serve to mold-torch", "[cli][twin]") {
  TempDir dir;
  std::string log;
  const auto r = logged_run(
      mold::test::run_mold,
      {"run", "z-image-turbo", "a fox", "--tiny", "--plan", "--local"}, dir,
      log);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("plan for one image"));
  CHECK_THAT(log, Contains("libtorch_cpu"));

  TempDir serve_dir;
  std::string serve_log;
  const auto serve = logged_run(mold::test::run_mold, {"serve", "--help"},
                                serve_dir, serve_log);
  CHECK(serve.exit_code == 0);
  CHECK_THAT(serve.out, Contains("mold serve"));
  CHECK_THAT(serve_log, Contains("libtorch_cpu"));
}
