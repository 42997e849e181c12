#pragma once
/// Which BLAS this process calls. libtorch's float32 matrix products on the cpu
/// go through whatever `sgemm_` resolves to; Debian's libtorch takes it from
/// `libblas.so.3`, which on a fresh Debian 12 is the *reference* BLAS (netlib),
/// tens of times slower than OpenBLAS on the same machine (docs/benchmarks.md).
/// The answer comes from the dynamic linker (the object that defines `sgemm_`
/// in this process), not from the packages installed.

#include <string>
#include <string_view>

namespace mold {

struct BlasLibrary {
  enum class Kind {
    none,  ///< no loaded object defines sgemm_ (a process without libtorch)
    reference,  ///< the reference BLAS (netlib): correct, and slow
    openblas,
    blis,
    mkl,
    other,  ///< another library (ATLAS, or one linked into libtorch itself)
  };
  Kind kind = Kind::none;
  /// The file that defines sgemm_, symbolic links resolved; empty for none.
  std::string path;
  /// The vendor's own description (OpenBLAS's build configuration, MKL's or
  /// BLIS's version), or empty when the library offers none.
  std::string version;
  /// The library's own thread count (OpenBLAS, BLIS, MKL); 0 when unknown.
  int threads = 0;

  /// Whether float32 matrix products run far below the machine's speed.
  bool slow() const { return kind == Kind::reference; }
};

/// "none", "reference", "OpenBLAS", "BLIS", "MKL" or "other".
std::string_view to_string(BlasLibrary::Kind kind);

/// The BLAS library loaded in this process.
BlasLibrary loaded_blas_library();

/// Sets the BLAS's own thread pool (OpenBLAS, BLIS, MKL) to `threads`: false
/// when the loaded BLAS has none to set (the reference BLAS, none loaded).
/// OpenBLAS otherwise starts one thread per logical CPU whatever libtorch
/// was told, and its threads wait for work by spinning.
bool set_blas_threads(int threads);

/// What a library is, from its resolved path and which vendor entry points it
/// defines: the vendors by their symbols, the reference BLAS by Debian's and
/// the usual install paths (Debian's `blas/` folder; elsewhere `librefblas.so`,
/// or a `libblas.so` with no vendor symbol outside a vendor's folder such as
/// Debian's `atlas/`).
BlasLibrary::Kind classify_blas_library(std::string_view path, bool openblas,
                                        bool blis, bool mkl);

/// What to do when the library is slow: which package makes libblas.so.3 a
/// fast one, and why. Empty when it is not slow.
std::string blas_advice(const BlasLibrary& blas);

/// What to do when OpenBLAS runs the kernels of an older CPU than this one
/// (its build did not know the CPU: Debian 12's 0.3.21 runs a Sapphire Rapids
/// Xeon as Prescott, float32 products 6 times slower there, docs/molddiag.md):
/// the core its build configuration names, and the OPENBLAS_CORETYPE that
/// uses the CPU's AVX-512 (`avx512`) or AVX2 (`avx2`). Empty otherwise.
std::string openblas_core_advice(const BlasLibrary& blas, bool avx512,
                                 bool avx2);

}  // namespace mold
