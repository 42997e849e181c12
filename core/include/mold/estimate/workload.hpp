#pragma once
/// What an operation will do, in the terms that decide its working memory.

#include <string>
#include <string_view>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/device/cpu_matmul_kernel.hpp"

namespace mold {

/// Operation names every family understands. Plugins may add their own strings.
namespace ops {
inline constexpr std::string_view kTextEncode = "text_encode";
inline constexpr std::string_view kDenoise = "denoise";
inline constexpr std::string_view kVaeEncode = "vae_encode";
inline constexpr std::string_view kVaeDecode = "vae_decode";
}  // namespace ops

/// One operation on one device. Sizes are those of the image in pixels (for a
/// decode: the output; for an encode: the input). `tile` is the edge of a
/// square tile in latent units (0 = the whole image at once); estimates then
/// answer for one tile.
/// The ranges Workload::validate() accepts: far beyond any diffusion image,
/// small enough that no size product of an estimate can wrap.
inline constexpr int kMaxImageSide = 65536;  ///< width, height (pixels)
inline constexpr int kMaxBatch = 1024;       ///< images at once
inline constexpr int kMaxFrames = 4096;      ///< frames (video VAEs)
inline constexpr int kMaxTile = 65536;       ///< tile edge (latent units)
inline constexpr int kMaxTokens = 1 << 20;   ///< text tokens
inline constexpr int kMaxInputImages = 16;   ///< an edit's source images
inline constexpr int kMaxThreads = 4096;     ///< compute threads

/// The pixels of one image an operation takes.
struct ImageSize {
  int width = 0;
  int height = 0;
  bool operator==(const ImageSize& o) const {
    return width == o.width && height == o.height;
  }
};

struct Workload {
  std::string family;  ///< "qwen_image"
  std::string
      model;  ///< "qwen-image-edit-2511" (may be empty: the family default)
  std::string op;       ///< one of ops::*, or a plugin's own
  std::string backend;  ///< "cuda", "cpu", ...
  std::string dtype = "float16";
  int batch = 1;
  int height = 0;
  int width = 0;
  int frames = 1;
  int tile = 0;
  /// Text tokens: the text encoder's sequence length (text_encode), the
  /// caption tokens the denoiser attends to (denoise); 0 when not relevant.
  int tokens = 0;
  /// The architecture: "default" (the published model) or another built-in
  /// ("tiny"); estimators that know only the published one may refuse others.
  std::string arch = "default";
  /// The images an operation takes besides the one it makes (an edit's
  /// source images), each at the size this operation sees it: the vision
  /// encoder's input (vision_encode, text_encode), the VAE's (vae_encode,
  /// denoise). Empty for text-to-image.
  std::vector<ImageSize> images{};
  /// The threads that compute the op at once (libtorch's intra-op threads on
  /// the cpu backend): a cpu library's per-thread scratch grows with them.
  /// 1 on a GPU backend.
  int threads = 1;
  /// The cpu backend's bfloat16 matrix-product kernel, whose scratch each
  /// thread takes (estimate/matmul_scratch.hpp): this host's.
  CpuMatmulKernel matmul_kernel = host_cpu_matmul_kernel();
  /// The op's weights are held as ggml blocks (a q4 or q8 variant, a GGUF
  /// checkpoint) and each matrix is dequantized into a scratch buffer in the
  /// dtype as its layer runs: the scratch, as large as the largest matrix,
  /// is working memory of the op.
  bool quantized = false;
  /// A VAE op whose attention runs in chunks of scores under this many bytes
  /// (the recovery ladder's bounded rung): the scores' n x n term is replaced
  /// by the bound. 0: the whole attention at once.
  Bytes attention_bound = 0;

  /// "qwen_image vae_decode on cuda, 832x1248 float16, batch 1"
  std::string describe() const;
  /// Throws InvalidArgument naming the field, its value and its range when a
  /// size or count is out of range (kMaxImageSide, ...), the dtype unknown, or
  /// a name empty.
  void validate() const;
};

/// The dtypes a model computes in (mold run --dtype, a variant's dtype, the
/// calibration tables): "float32", "float16", "bfloat16".
bool is_compute_dtype(std::string_view dtype);
/// "float32, float16 or bfloat16": for messages.
std::string compute_dtype_names();

/// Bytes per element of "float32", "float16", "bfloat16", "float8_e4m3fn",
/// "int8", ... Throws ParseError listing the known names.
Bytes dtype_size(std::string_view dtype);

}  // namespace mold
