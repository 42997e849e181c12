#pragma once
/// Which bfloat16 matrix-product kernel this host's libtorch runs: oneDNN picks
/// one by the CPU's instructions, and their scratch per compute thread differs
/// by up to 40 times (estimate/matmul_scratch.hpp). Read from the CPU (cpuid,
/// the OS's saved state, Linux's AMX permission) the way oneDNN 2.6 decides,
/// honouring ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA). Torch-free.

#include <string_view>

namespace mold {

enum class CpuMatmulKernel {
  /// oneDNN's brgemm on AVX-512 with bfloat16 instructions (AMD Zen 4,
  /// Intel Cooper Lake): where the estimate tables were measured.
  avx512_bf16,
  /// oneDNN's brgemm on Intel AMX tiles (Sapphire Rapids and later).
  amx,
  /// oneDNN's gemm:jit on AVX-512 without bfloat16 instructions (Skylake-SP to
  /// Ice Lake): it computes in float32, each thread with a float32 copy of
  /// the product's output.
  avx512,
  /// No oneDNN bfloat16 product (AVX2, Arm): libtorch's own kernels.
  other,
};

/// What the CPU and the OS offer, as far as the choice needs.
struct CpuMatmulFeatures {
  bool avx512_core =
      false;  ///< AVX-512 F, BW, VL and DQ, state saved by the OS
  bool avx512_bf16 = false;  ///< AVX512_BF16
  bool amx_bf16 = false;     ///< AMX-TILE and AMX-BF16, tile state usable
  bool avx2 = false;         ///< AVX2, state saved by the OS
};

/// The kernel oneDNN picks for `features` under the cap `max_isa` (the value
/// of ONEDNN_MAX_CPU_ISA: "AVX512_CORE_BF16", "AVX2", ...; empty, "ALL" or
/// "DEFAULT" for none).
CpuMatmulKernel choose_cpu_matmul_kernel(const CpuMatmulFeatures& features,
                                         std::string_view max_isa);

/// This host's CPU and OS (cpuid, XCR0; asks Linux for the AMX tile state),
/// read once per process.
CpuMatmulFeatures host_cpu_features();

/// This host's, read once per process (again after
/// use_exactly_modelled_kernel()).
CpuMatmulKernel host_cpu_matmul_kernel();

/// Where this host would run AMX, whose scratch estimate/matmul_scratch only
/// bounds, makes oneDNN and the estimates use brgemm avx512_core_bf16, whose
/// scratch it models exactly (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 for this
/// process, unless the variable is set): calibration subtracts the threads'
/// scratch from each measured peak. Call before libtorch's first bfloat16
/// product. Returns the kernel in force.
CpuMatmulKernel use_exactly_modelled_kernel();

/// Whether estimate/matmul_scratch models `kernel`'s scratch within a few
/// KiB (brgemm avx512_core_bf16, gemm:jit avx512_core), not only bounds it.
bool scratch_modelled_exactly(CpuMatmulKernel kernel);

/// "oneDNN brgemm avx512_core_bf16", "oneDNN brgemm avx512_core_amx", ...
std::string_view to_string(CpuMatmulKernel kernel);

}  // namespace mold
