// molddiag doctor, run as the real binary: the BLAS it finds, the backends,
// the matrix-product timing, --strict and its flags' validation.
#include <catch2/catch.hpp>
#include <filesystem>
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
  // The only warning a machine with libtorch's BLAS can get is the slow one.
  CHECK(j["warnings"].size() == (kind == "reference" ? 1u : 0u));

  // --strict fails exactly when it warned.
  const auto strict = run_molddiag({"doctor", "--strict", "--no-gemm",
                                    "--plugin-dir", mold::test::kPluginDir});
  CHECK(strict.exit_code == (kind == "reference" ? 3 : 0));
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
