// Which BLAS the process calls (a test binary that links libtorch has one),
// and the matrix-product timing of molddiag doctor and bench/gemm_bench.
#include <catch2/catch.hpp>
#include <filesystem>
#include <mold/device/blas_library.hpp>
#include <mold/tensor/gemm_rate.hpp>

using Kind = mold::BlasLibrary::Kind;
using mold::classify_blas_library;

TEST_CASE("a BLAS library is classified by its vendor symbols, then its path",
          "[blas]") {
  // Debian's reference BLAS and LAPACK, and other systems' names for it.
  CHECK(
      classify_blas_library("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                            false, false, false) == Kind::reference);
  CHECK(classify_blas_library("/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3",
                              false, false, false) == Kind::reference);
  CHECK(classify_blas_library("/usr/lib64/libblas.so.3", false, false, false) ==
        Kind::reference);
  CHECK(classify_blas_library("/opt/lib/librefblas.so", false, false, false) ==
        Kind::reference);
  // The vendors answer by their own entry points, whatever the file is called.
  CHECK(classify_blas_library(
            "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", true,
            false, false) == Kind::openblas);
  CHECK(classify_blas_library(
            "/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3", false, true,
            false) == Kind::blis);
  CHECK(classify_blas_library("/opt/intel/lib/libmkl_rt.so.2", false, false,
                              true) == Kind::mkl);
  // Debian's ATLAS, and a BLAS linked into libtorch itself: not the reference.
  CHECK(classify_blas_library("/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3",
                              false, false, false) == Kind::other);
  CHECK(classify_blas_library("/usr/lib/python3/torch/lib/libtorch_cpu.so",
                              false, false, false) == Kind::other);
  CHECK(classify_blas_library("", false, false, false) == Kind::none);
}

TEST_CASE("the BLAS loaded with libtorch is found, with its file", "[blas]") {
  const mold::BlasLibrary blas = mold::loaded_blas_library();
  INFO("kind " << mold::to_string(blas.kind) << ", path " << blas.path);
  REQUIRE(blas.kind != Kind::none);
  CHECK(std::filesystem::is_regular_file(blas.path));
  CHECK(blas.slow() == (blas.kind == Kind::reference));
  CHECK(mold::blas_advice(blas).empty() == !blas.slow());
  if (blas.kind == Kind::openblas) {
    CHECK(blas.version.find("OpenBLAS") != std::string::npos);
    CHECK(blas.threads >= 1);
  }
  if (blas.slow())
    CHECK(mold::blas_advice(blas).find("libopenblas0-pthread") !=
          std::string::npos);
}

TEST_CASE(
    "OpenBLAS running an older CPU's kernels on a CPU with AVX2 or AVX-512 is "
    "told the OPENBLAS_CORETYPE to set",
    "[blas]") {
  mold::BlasLibrary blas;
  blas.kind = Kind::openblas;
  blas.version =
      "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott "
      "MAX_THREADS=64";
  const std::string avx512 = mold::openblas_core_advice(blas, true, true);
  CHECK_THAT(avx512, Catch::Contains("runs its Prescott kernels on a CPU with "
                                     "AVX-512"));
  CHECK_THAT(avx512, Catch::Contains("OPENBLAS_CORETYPE=SkylakeX"));
  CHECK_THAT(mold::openblas_core_advice(blas, false, true),
             Catch::Contains("OPENBLAS_CORETYPE=Haswell"));
  // A CPU without AVX2 runs what it can.
  CHECK(mold::openblas_core_advice(blas, false, false).empty());
  // The CPU's own kernels, or another library: nothing to say.
  blas.version =
      "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX "
      "MAX_THREADS=64";
  CHECK(mold::openblas_core_advice(blas, true, true).empty());
  blas.version = "OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell MAX_THREADS=64";
  CHECK(mold::openblas_core_advice(blas, true, true).empty());
  blas.kind = Kind::blis;
  blas.version = "Prescott";
  CHECK(mold::openblas_core_advice(blas, true, true).empty());
}

TEST_CASE("a matrix product is timed at least three times", "[blas]") {
  const mold::GemmShape shape{8, 64, 32};
  CHECK(shape.flops() == 2.0 * 8 * 64 * 32);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const mold::GemmRate rate = mold::measure_gemm(shape, dtype, 0.01);
    CHECK(rate.repeats >= 3);
    CHECK(rate.seconds > 0);
    CHECK(rate.gflops == Approx(shape.flops() / rate.seconds / 1e9));
  }
}
