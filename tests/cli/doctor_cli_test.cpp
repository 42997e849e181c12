// molddiag doctor, run as the real binary: the BLAS it finds, the backends,
// the matrix-product timing, --strict and its flags' validation.
#include <catch2/catch.hpp>
#include <filesystem>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"

using mold::test::run_molddiag;

TEST_CASE("molddiag doctor --json names the BLAS, the backends and threads",
          "[doctor]") {
  const auto r = run_molddiag({"doctor", "--json", "--no-gemm", "--plugin-dir",
                               mold::test::kPluginDir});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::string kind = j["blas"]["kind"];
  CHECK((kind == "reference" || kind == "OpenBLAS" || kind == "BLIS" ||
         kind == "MKL" || kind == "other"));
  CHECK(std::filesystem::is_regular_file(j["blas"]["path"].get<std::string>()));
  CHECK(j["blas"]["slow"] == (kind == "reference"));
  CHECK(j["libtorch"]["threads"].get<int>() >= 1);
  // The bfloat16 kernel, as the estimates' scratch model reads it: capped by
  // ONEDNN_MAX_CPU_ISA to libtorch's own on any CPU.
  const std::string kernel = j["libtorch"]["bfloat16_kernel"];
  const bool named = kernel.rfind("oneDNN ", 0) == 0 ||
                     kernel == "libtorch's own kernels, not measured";
  CHECK(named);
  const auto capped = run_molddiag(
      {"doctor", "--json", "--no-gemm", "--plugin-dir", mold::test::kPluginDir},
      {{"ONEDNN_MAX_CPU_ISA", "AVX2"}});
  REQUIRE(capped.exit_code == 0);
  CHECK(nlohmann::json::parse(capped.out)["libtorch"]["bfloat16_kernel"] ==
        "libtorch's own kernels, not measured");
  CHECK(j["gemm"].empty());
  bool cpu = false;
  for (const auto& b : j["backends"])
    if (b["name"] == "cpu") {
      cpu = true;
      CHECK(b["total"].get<std::uint64_t>() > 0);
    }
  CHECK(cpu);
  // The warnings a machine with libtorch's BLAS can get: the slow one, and
  // OpenBLAS running an older CPU's kernels (told apart below).
  for (const auto& w : j["warnings"]) {
    const std::string text = w;
    CHECK((text.rfind("libtorch calls the reference BLAS", 0) == 0 ||
           text.rfind("OpenBLAS runs its ", 0) == 0));
  }

  // --strict fails exactly when it warned.
  const auto strict = run_molddiag({"doctor", "--strict", "--no-gemm",
                                    "--plugin-dir", mold::test::kPluginDir});
  CHECK(strict.exit_code == (j["warnings"].empty() ? 0 : 3));
  CHECK((strict.out.find("warning: libtorch calls the reference BLAS") !=
         std::string::npos) == (kind == "reference"));
}

TEST_CASE("molddiag doctor times a matrix product in float32 and bfloat16",
          "[doctor]") {
  const auto r = run_molddiag({"doctor", "--gemm-rows", "16", "--gemm-in", "64",
                               "--gemm-out", "32", "--plugin-dir",
                               mold::test::kPluginDir});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("matrix product [16 x 64] by [64 x 32]:") !=
        std::string::npos);
  CHECK(r.out.find("  float32 ") != std::string::npos);
  CHECK(r.out.find("  bfloat16 ") != std::string::npos);
  CHECK(r.out.find("GFLOP/s") != std::string::npos);
}

TEST_CASE("molddiag doctor refuses a matrix shape out of range", "[doctor]") {
  for (const char* flag : {"--gemm-rows", "--gemm-in", "--gemm-out"}) {
    for (const char* value : {"0", "65537", "-3", "x"}) {
      const auto r = run_molddiag({"doctor", flag, value});
      INFO(flag << " " << value << ": " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(flag) != std::string::npos);
      CHECK(r.err.find("Run 'molddiag doctor --help'") != std::string::npos);
    }
  }
}

TEST_CASE(
    "molddiag doctor tells OpenBLAS running an older CPU's kernels which "
    "OPENBLAS_CORETYPE to set",
    "[doctor]") {
  // OPENBLAS_CORETYPE=Prescott makes OpenBLAS run its Prescott (SSE3) kernels
  // on any x86-64 CPU, as it does on one its build does not know.
  const auto r = run_molddiag(
      {"doctor", "--json", "--no-gemm", "--plugin-dir", mold::test::kPluginDir},
      {{"OPENBLAS_CORETYPE", "Prescott"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  if (j["blas"]["kind"] != "OpenBLAS") return;  // told by the case above
  const auto cpu = mold::host_cpu_features();
  bool told = false;
  for (const auto& w : j["warnings"])
    told = told || w.get<std::string>().rfind(
                       "OpenBLAS runs its Prescott kernels", 0) == 0;
  CHECK(told == (cpu.avx2 || cpu.avx512_core));
}
