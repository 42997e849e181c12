#include "mold/device/blas_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "mold/base/text.hpp"

namespace mold {

namespace {

/// Debian's name for this machine's architecture, as in the alternative's name.
#if defined(__x86_64__)
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kMultiarch = "<arch>-linux-gnu";
#endif

/// A symbol of `handle`, or of the whole process when the handle is null.
void* symbol(void* handle, const char* name) {
  return dlsym(handle ? handle : RTLD_DEFAULT, name);
}

}  // namespace

std::string_view to_string(BlasLibrary::Kind kind) {
  switch (kind) {
  case BlasLibrary::Kind::none:
    return "none";
  case BlasLibrary::Kind::reference:
    return "reference";
  case BlasLibrary::Kind::openblas:
    return "OpenBLAS";
  case BlasLibrary::Kind::blis:
    return "BLIS";
  case BlasLibrary::Kind::mkl:
    return "MKL";
  case BlasLibrary::Kind::other:
    return "other";
  }
  return "other";
}

BlasLibrary::Kind classify_blas_library(std::string_view path, bool openblas,
                                        bool blis, bool mkl) {
  if (path.empty()) return BlasLibrary::Kind::none;
  if (openblas) return BlasLibrary::Kind::openblas;
  if (blis) return BlasLibrary::Kind::blis;
  if (mkl) return BlasLibrary::Kind::mkl;
  const std::filesystem::path file(path);
  const std::string folder = file.parent_path().filename().string();
  const std::string name = file.filename().string();
  // Debian installs the reference BLAS as <libdir>/blas/libblas.so.3.* (and
  // its LAPACK beside it in lapack/); other systems as libblas.so or
  // librefblas.so. A vendor's libblas.so.3 defines its own entry points, so
  // a libblas without them is the reference one.
  // Debian's other BLAS packages install their libblas.so.3 in a folder named
  // after them (atlas/, openblas-*/, blis-*/): not the reference one.
  const bool vendor_folder = folder.find("atlas") != std::string::npos ||
                             folder.find("openblas") != std::string::npos ||
                             folder.find("blis") != std::string::npos ||
                             folder.find("mkl") != std::string::npos;
  if (folder == "blas" || folder == "lapack" ||
      starts_with(name, "librefblas.so") ||
      (starts_with(name, "libblas.so") && !vendor_folder))
    return BlasLibrary::Kind::reference;
  return BlasLibrary::Kind::other;
}

BlasLibrary loaded_blas_library() {
  BlasLibrary blas;
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (!sgemm || !dladdr(sgemm, &info) || !info.dli_fname) return blas;
  std::error_code ec;
  const std::filesystem::path resolved =
      std::filesystem::canonical(info.dli_fname, ec);
  blas.path = ec ? std::string(info.dli_fname) : resolved.string();
  // The vendor's entry points, looked up in the library that defines sgemm_
  // (RTLD_NOLOAD: it is loaded already; nothing new is loaded).
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  using Text = const char* (*)();
  using Count = int (*)();
  const auto openblas_config =
      reinterpret_cast<Text>(symbol(handle, "openblas_get_config"));
  const auto blis_version =
      reinterpret_cast<Text>(symbol(handle, "bli_info_get_version_str"));
  using MklVersion = void (*)(char*, int);
  const auto mkl_version =
      reinterpret_cast<MklVersion>(symbol(handle, "MKL_Get_Version_String"));
  blas.kind =
      classify_blas_library(blas.path, openblas_config != nullptr,
                            blis_version != nullptr, mkl_version != nullptr);
  if (openblas_config) {
    blas.version = openblas_config();
    if (const auto threads =
            reinterpret_cast<Count>(symbol(handle, "openblas_get_num_threads")))
      blas.threads = threads();
  } else if (blis_version) {
    blas.version = std::string("BLIS ") + blis_version();
    if (const auto threads = reinterpret_cast<Count>(
            symbol(handle, "bli_thread_get_num_threads")))
      blas.threads = threads();
  } else if (mkl_version) {
    char text[256] = {};
    mkl_version(text, sizeof text - 1);
    blas.version = text;
    if (const auto threads =
            reinterpret_cast<Count>(symbol(handle, "MKL_Get_Max_Threads")))
      blas.threads = threads();
  }
  if (handle) dlclose(handle);
  // Whitespace at the ends of a vendor's text (OpenBLAS ends its with one).
  while (!blas.version.empty() &&
         (blas.version.back() == ' ' || blas.version.back() == '\n'))
    blas.version.pop_back();
  return blas;
}

bool set_blas_threads(int threads) {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (threads < 1 || !sgemm || !dladdr(sgemm, &info) || !info.dli_fname)
    return false;
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  using Set = void (*)(int);
  bool set = false;
  // Each vendor's own setter, in the library that defines sgemm_.
  for (const char* name : {"openblas_set_num_threads",
                           "bli_thread_set_num_threads", "MKL_Set_Num_Threads"})
    if (const auto setter = reinterpret_cast<Set>(symbol(handle, name))) {
      setter(threads);
      set = true;
      break;
    }
  if (handle) dlclose(handle);
  return set;
}

std::string blas_advice(const BlasLibrary& blas) {
  if (!blas.slow()) return {};
  return fmt::format(
      "libtorch calls the reference BLAS ({}): float32 matrix products run "
      "tens of times slower than with OpenBLAS. Install Debian's OpenBLAS "
      "(apt-get install libopenblas0-pthread; scripts/install-deps.sh does), "
      "which becomes libblas.so.3 for every program (update-alternatives "
      "--config libblas.so.3-{} chooses among those installed)",
      blas.path, kMultiarch);
}

std::string openblas_core_advice(const BlasLibrary& blas, bool avx512,
                                 bool avx2) {
  if (blas.kind != BlasLibrary::Kind::openblas || !(avx512 || avx2)) return {};
  // OpenBLAS's cores without AVX2, by the names its configuration uses.
  static const std::set<std::string, std::less<>> kOlder = {
      "Katmai",    "Coppermine",   "Northwood",  "Prescott", "Banias",
      "Core2",     "Penryn",       "Dunnington", "Nehalem",  "Atom",
      "Opteron",   "Opteron_SSE3", "Barcelona",  "Bobcat",   "Sandybridge",
      "Bulldozer", "Piledriver",   "Steamroller"};
  std::string core;
  std::istringstream words(blas.version);
  for (std::string word; words >> word;)
    if (kOlder.count(word)) core = word;
  if (core.empty()) return {};
  const std::string_view coretype = avx512 ? "SkylakeX" : "Haswell";
  return fmt::format(
      "OpenBLAS runs its {} kernels on a CPU with {} (its build does not know "
      "this CPU): float32 matrix products run several times slower. Set "
      "OPENBLAS_CORETYPE={} in the environment of mold and molddiag (OpenBLAS "
      "reads it when it loads)",
      core, avx512 ? "AVX-512" : "AVX2", coretype);
}

}  // namespace mold
