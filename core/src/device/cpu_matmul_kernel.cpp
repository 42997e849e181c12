#include "mold/device/cpu_matmul_kernel.hpp"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#  include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#  include <sys/syscall.h>
#  include <unistd.h>
#endif

#include "mold/base/text.hpp"

namespace mold {

namespace {

#if defined(__x86_64__)
bool bit(unsigned value, int n) { return (value >> n) & 1U; }

/// The OS's saved state (XCR0); 0 where the OS does not enable XSAVE.
unsigned long long saved_state() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !bit(c, 27)) return 0;  // OSXSAVE
  unsigned low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<unsigned long long>(high) << 32) | low;
}

/// Linux gives a process the AMX tile state only when it asks
/// (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); oneDNN asks the same way.
bool amx_permitted() {
#  if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#  else
  return false;
#  endif
}

CpuMatmulFeatures read_features() {
  CpuMatmulFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned long long xcr0 = saved_state();
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;  // SSE, AVX, opmask, ZMM
  f.avx2 = (xcr0 & 0x6) == 0x6 && bit(b, 5);     // SSE and AVX state, AVX2
  f.avx512_core = zmm_saved && bit(b, 16) && bit(b, 17) && bit(b, 30) &&
                  bit(b, 31);                            // F, DQ, BW, VL
  const bool amx = bit(d, 22) && bit(d, 24);             // AMX-BF16, AMX-TILE
  const bool tiles_saved = (xcr0 & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (a >= 1) __cpuid_count(7, 1, a1, b1, c1, d1);  // leaf 7's last subleaf
  f.avx512_bf16 = f.avx512_core && bit(a1, 5);
  f.amx_bf16 = f.avx512_core && amx && tiles_saved && amx_permitted();
  return f;
}
#else
CpuMatmulFeatures read_features() { return {}; }
#endif

}  // namespace

CpuMatmulKernel choose_cpu_matmul_kernel(const CpuMatmulFeatures& features,
                                         std::string_view max_isa) {
  // libtorch 1.13 hands bfloat16 products to oneDNN from AVX-512 core on.
  if (!features.avx512_core) return CpuMatmulKernel::other;
  std::string cap(max_isa);
  for (char& c : cap) c = char(std::toupper(static_cast<unsigned char>(c)));
  const bool capped = !cap.empty() && cap != "ALL" && cap != "DEFAULT";
  const bool amx_allowed = !capped || cap.find("AMX") != std::string::npos;
  const bool bf16_allowed = amx_allowed || cap == "AVX512_CORE_BF16";
  const bool avx512_allowed = bf16_allowed || starts_with(cap, "AVX512_CORE");
  if (features.amx_bf16 && amx_allowed) return CpuMatmulKernel::amx;
  if ((features.avx512_bf16 || features.amx_bf16) && bf16_allowed)
    return CpuMatmulKernel::avx512_bf16;
  if (avx512_allowed) return CpuMatmulKernel::avx512;
  return CpuMatmulKernel::other;
}

namespace {

/// oneDNN's cap on its instructions, nullptr when none is set.
const char* isa_cap() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  return cap != nullptr ? cap : std::getenv("DNNL_MAX_CPU_ISA");
}

CpuMatmulKernel read_host_kernel() {
  const char* cap = isa_cap();
  return choose_cpu_matmul_kernel(host_cpu_features(), cap ? cap : "");
}

std::atomic<CpuMatmulKernel>& host_kernel() {
  static std::atomic<CpuMatmulKernel> kernel{read_host_kernel()};
  return kernel;
}

}  // namespace

CpuMatmulFeatures host_cpu_features() {
  static const CpuMatmulFeatures features = read_features();
  return features;
}

CpuMatmulKernel host_cpu_matmul_kernel() { return host_kernel().load(); }

CpuMatmulKernel use_exactly_modelled_kernel() {
  if (host_kernel().load() == CpuMatmulKernel::amx && isa_cap() == nullptr) {
    setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16", 1);
    host_kernel().store(read_host_kernel());
  }
  return host_kernel().load();
}

bool scratch_modelled_exactly(CpuMatmulKernel kernel) {
  return kernel == CpuMatmulKernel::avx512_bf16 ||
         kernel == CpuMatmulKernel::avx512;
}

std::string_view to_string(CpuMatmulKernel kernel) {
  switch (kernel) {
  case CpuMatmulKernel::avx512_bf16:
    return "oneDNN brgemm avx512_core_bf16";
  case CpuMatmulKernel::amx:
    return "oneDNN brgemm avx512_core_amx";
  case CpuMatmulKernel::avx512:
    return "oneDNN gemm:jit avx512_core";
  case CpuMatmulKernel::other:
    return "libtorch's own kernels, not measured";
  }
  return "unknown";
}

}  // namespace mold
