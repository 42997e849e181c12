#pragma once
// The published Z-Image transformer's matrix products
// (Tongyi-MAI/Z-Image-Turbo: dim 3840, SwiGLU 10240, 30 layers and 2 + 2
// refiner layers) and their FLOPs over a step's tokens: what gemm_bench and
// thread_scaling_bench read a step's time against.

#include <cstdint>
#include <vector>

namespace mold_bench {

struct ZImageLinear {
  const char* name;
  std::int64_t in, out;
  int per_layer;  ///< how many of this shape a transformer layer runs
};

inline constexpr std::int64_t kZImageDim = 3840, kZImageFfn = 10240;
inline constexpr std::int64_t kZImageLayers = 30, kZImageRefiners = 2;

inline const std::vector<ZImageLinear>& zimage_linears() {
  static const std::vector<ZImageLinear> linears = {
      {"attention q, k, v, out", kZImageDim, kZImageDim, 4},
      {"feed-forward w1, w3", kZImageDim, kZImageFfn, 2},
      {"feed-forward w2", kZImageFfn, kZImageDim, 1},
  };
  return linears;
}

/// FLOPs of one layer's attention products over `tokens` (scores and the
/// weighted sum: 2 x 2 x tokens^2 x dim).
inline double zimage_attention_flops(std::int64_t tokens) {
  return 4.0 * double(tokens) * double(tokens) * double(kZImageDim);
}

}  // namespace mold_bench
