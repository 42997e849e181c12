#pragma once
/// A weight kept as its GGUF blocks in device memory and dequantized when its
/// layer runs: a q4 checkpoint holds ~4.5 bits per weight on the device, not
/// 16. Dequantization is a few tensor operations on the blocks (bit masks,
/// shifts, a multiply and an add per element, in float32 as ggml's reference
/// does it), so it runs on whatever device holds them and matches
/// mold/tensor/ggml_quant.hpp's reference bit for bit. An fp8 weight is held
/// the same way: one byte per element and a float32 scale per row, decoded
/// through mold/tensor/float8.hpp's table.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/tensor/float8.hpp"
#include "mold/tensor/ggml_quant.hpp"
#include "mold/tensor/gguf_file.hpp"

namespace mold {

struct QuantizedTensor {
  GgmlType type = GgmlType::f32;  ///< the ggml block type, unless float8
  /// Set for an fp8 weight: `blocks` is [rows, columns], one byte per
  /// element, and each row's values are multiplied by its `scale`.
  std::optional<Float8Format> float8;
  std::vector<std::int64_t> shape;  ///< PyTorch order (outermost first)
  at::Tensor blocks;  ///< uint8, [blocks, block bytes], on its device
  at::Tensor scale;   ///< fp8 only: float32 [rows], on the blocks' device

  std::int64_t numel() const;
  /// Device bytes it holds: its bytes in the file (and an fp8 weight's
  /// scales).
  Bytes bytes() const;
  /// "Q4_K", "F8_E4M3": what the blocks are, for messages.
  std::string type_name() const;
  /// Both tensors moved to `device`.
  void to(const c10::Device& device);
};

/// An fp8 matrix: `bytes` (uint8, rows x columns of `shape`) and `scale`
/// (float32: one value for the whole tensor, or one per row), on one device.
/// InvalidArgument when they do not match.
QuantizedTensor make_float8(Float8Format format,
                            std::vector<std::int64_t> shape, at::Tensor bytes,
                            at::Tensor scale);

/// The tensor `info` of `file` as blocks on `device` (one copy from the
/// mapping). Throws GgufError for a type mold cannot dequantize.
QuantizedTensor load_quantized(const GgufFile& file, const GgufTensorInfo& info,
                               const at::Device& device);

/// The blocks of `blocks` (uint8, a whole number of `type` blocks) wrapped
/// with their shape. Throws InvalidArgument when they do not match.
QuantizedTensor make_quantized(GgmlType type, std::vector<std::int64_t> shape,
                               at::Tensor blocks);

/// The weight in `dtype` on the blocks' device: ggml's reference arithmetic in
/// float32, then converted. On the cpu, the reference itself over the blocks
/// in parallel (one pass over memory); elsewhere dequantize_by_tensor_ops().
at::Tensor dequantize(const QuantizedTensor& tensor,
                      at::ScalarType dtype = at::kFloat);
/// The same into `out` (contiguous, numel() elements, on the blocks'
/// device; its dtype is the one made): a layer that dequantizes weight
/// after weight reuses one buffer instead of faulting in fresh pages for
/// each. InvalidArgument when `out` does not fit.
void dequantize_into(const QuantizedTensor& tensor, at::Tensor& out);
/// The same values from tensor operations (masks, shifts, a multiply and an
/// add per element), which run on any device.
at::Tensor dequantize_by_tensor_ops(const QuantizedTensor& tensor,
                                    at::ScalarType dtype = at::kFloat);

}  // namespace mold
