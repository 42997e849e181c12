#include "mold/tensor/quantized_tensor.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/tensor/ggml_to_bfloat16.hpp"

namespace mold {

namespace {

using at::indexing::Slice;

/// Bytes [from, from + count) of every block, as int32 (room for shifts).
at::Tensor field(const at::Tensor& blocks, std::int64_t from,
                 std::int64_t count) {
  return blocks.index({Slice(), Slice(from, from + count)})
      .to(at::kInt)
      .contiguous();
}

/// The little-endian half at byte `from` of every block, as float32 [n, 1].
at::Tensor half_field(const at::Tensor& blocks, std::int64_t from) {
  return blocks.index({Slice(), Slice(from, from + 2)})
      .contiguous()
      .view(at::kHalf)
      .to(at::kFloat);
}

/// Q4_K and Q5_K: the 8 six-bit scales and mins of each super-block from its
/// 12 packed bytes (see ggml_quant.cpp's scale_min_k4).
std::pair<at::Tensor, at::Tensor> scales_mins_k4(const at::Tensor& q) {
  // q: int32 [n, 12]
  const at::Tensor low_scale = q.index({Slice(), Slice(0, 4)}).bitwise_and(63);
  const at::Tensor low_min = q.index({Slice(), Slice(4, 8)}).bitwise_and(63);
  const at::Tensor high_scale =
      q.index({Slice(), Slice(8, 12)})
          .bitwise_and(0xF)
          .bitwise_or(
              q.index({Slice(), Slice(0, 4)}).__rshift__(6).__lshift__(4));
  const at::Tensor high_min =
      q.index({Slice(), Slice(8, 12)})
          .__rshift__(4)
          .bitwise_or(
              q.index({Slice(), Slice(4, 8)}).__rshift__(6).__lshift__(4));
  return {at::cat({low_scale, high_scale}, 1).to(at::kFloat),
          at::cat({low_min, high_min}, 1).to(at::kFloat)};
}

/// The 32 elements of Q4_0..Q5_1 blocks: low nibbles then high nibbles.
at::Tensor nibbles32(const at::Tensor& qs) {
  return at::cat({qs.bitwise_and(0xF), qs.__rshift__(4)}, 1);
}

/// Bit j (0..31) of each block's 4-byte qh, as int32 [n, 32].
at::Tensor high_bits32(const at::Tensor& qh_bytes) {
  const at::Tensor qh =
      qh_bytes.index({Slice(), 0})
          .bitwise_or(qh_bytes.index({Slice(), 1}).__lshift__(8))
          .bitwise_or(qh_bytes.index({Slice(), 2}).__lshift__(16))
          .to(at::kLong)
          .bitwise_or(
              qh_bytes.index({Slice(), 3}).to(at::kLong).__lshift__(24));
  const at::Tensor shifts = at::arange(32, qh.options().dtype(at::kLong));
  return qh.unsqueeze(1).__rshift__(shifts).bitwise_and(1).to(at::kInt);
}

/// IQ4_NL's and IQ4_XS's 16 levels, float32 (see ggml_quant.cpp).
at::Tensor iq4_levels(const c10::Device& device) {
  static const float kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};
  return at::from_blob(const_cast<float*>(kLevels), {16}, at::kFloat)
      .to(device);
}

/// A float8 format's 256 values as float32 on `device`.
at::Tensor float8_values(Float8Format format, const c10::Device& device) {
  const auto& table = float8_table(format);
  return at::from_blob(const_cast<float*>(table.data()), {256}, at::kFloat)
      .to(device);
}

/// The 32-element blocks: Q4_0..Q8_0 and IQ4_NL; an empty tensor for other
/// types.
at::Tensor dequantize_32(const at::Tensor& b, GgmlType type) {
  switch (type) {
  case GgmlType::q4_0: {
    const at::Tensor d = half_field(b, 0);
    return ((nibbles32(field(b, 2, 16)) - 8).to(at::kFloat) * d).reshape({-1});
  }
  case GgmlType::q4_1: {
    const at::Tensor d = half_field(b, 0), m = half_field(b, 2);
    return (nibbles32(field(b, 4, 16)).to(at::kFloat) * d + m).reshape({-1});
  }
  case GgmlType::q5_0: {
    const at::Tensor d = half_field(b, 0);
    const at::Tensor q =
        nibbles32(field(b, 6, 16))
            .bitwise_or(high_bits32(field(b, 2, 4)).__lshift__(4));
    return ((q - 16).to(at::kFloat) * d).reshape({-1});
  }
  case GgmlType::q5_1: {
    const at::Tensor d = half_field(b, 0), m = half_field(b, 2);
    const at::Tensor q =
        nibbles32(field(b, 8, 16))
            .bitwise_or(high_bits32(field(b, 4, 4)).__lshift__(4));
    return (q.to(at::kFloat) * d + m).reshape({-1});
  }
  case GgmlType::q8_0: {
    const at::Tensor d = half_field(b, 0);
    const at::Tensor q = b.index({Slice(), Slice(2, 34)})
                             .contiguous()
                             .view(at::kChar)
                             .to(at::kFloat);
    return (q * d).reshape({-1});
  }
  case GgmlType::iq4_nl: {
    const at::Tensor d = half_field(b, 0);
    const at::Tensor levels = iq4_levels(b.device());
    const at::Tensor q = nibbles32(field(b, 2, 16)).to(at::kLong);
    return (d * levels.index({q})).reshape({-1});
  }
  default:
    return {};
  }
}

/// Q2_K: 16 sub-blocks of 16 two-bit values, each with a 4-bit scale and min.
at::Tensor dequantize_q2_k(const at::Tensor& b) {
  const std::int64_t n = b.size(0);
  const at::Tensor d = half_field(b, 80), dmin = half_field(b, 82);
  const at::Tensor scales = field(b, 0, 16);
  // [n, 2 halves, 4 shifts, 32 bytes]: the output's order; sub-block s
  // is elements 16 s .. 16 s + 15.
  const at::Tensor shifts = at::arange(0, 8, 2, b.options().dtype(at::kInt));
  const at::Tensor q = field(b, 16, 64)
                           .view({n, 2, 1, 32})
                           .__rshift__(shifts.view({1, 1, 4, 1}))
                           .bitwise_and(3)
                           .reshape({n, 256});
  const at::Tensor dl =
      (d * scales.bitwise_and(0xF).to(at::kFloat)).repeat_interleave(16, 1);
  const at::Tensor ml =
      (dmin * scales.__rshift__(4).to(at::kFloat)).repeat_interleave(16, 1);
  return (dl * q.to(at::kFloat) - ml).reshape({-1});
}

/// Q3_K: 16 sub-blocks of 16 three-bit values (two low bits and a high-bit
/// mask), six-bit scales.
at::Tensor dequantize_q3_k(const at::Tensor& b) {
  const std::int64_t n = b.size(0);
  const at::Tensor d = half_field(b, 108);
  const auto ints = b.options().dtype(at::kInt);
  const at::Tensor shifts = at::arange(0, 8, 2, ints);
  const at::Tensor low = field(b, 32, 64)
                             .view({n, 2, 1, 32})
                             .__rshift__(shifts.view({1, 1, 4, 1}))
                             .bitwise_and(3);
  // The high bit of pair k (= 4 half + shift / 2) of sub-blocks is bit k
  // of hmask; a clear bit subtracts 4.
  const at::Tensor bits = at::arange(8, ints).view({1, 2, 4, 1});
  const at::Tensor high =
      field(b, 0, 32).view({n, 1, 1, 32}).__rshift__(bits).bitwise_and(1);
  const at::Tensor q = (low - (1 - high) * 4).reshape({n, 256});
  // The 16 six-bit scales (see ggml_quant.cpp's scale_k3).
  const at::Tensor packed = field(b, 96, 12);
  const at::Tensor head = packed.index({Slice(), Slice(0, 8)});
  const at::Tensor low4 =
      at::cat({head.bitwise_and(0xF), head.__rshift__(4)}, 1);
  const at::Tensor high2 = packed.index({Slice(), Slice(8, 12)})
                               .view({n, 1, 4})
                               .__rshift__(shifts.view({1, 4, 1}))
                               .bitwise_and(3)
                               .reshape({n, 16});
  const at::Tensor scale = low4.bitwise_or(high2.__lshift__(4)) - 32;
  const at::Tensor dl = (d * scale.to(at::kFloat)).repeat_interleave(16, 1);
  return (dl * q.to(at::kFloat)).reshape({-1});
}

/// IQ4_XS: 8 sub-blocks of 32 nibbles into the IQ4 levels, six-bit scales.
at::Tensor dequantize_iq4_xs(const at::Tensor& b) {
  const std::int64_t n = b.size(0);
  const at::Tensor d = half_field(b, 0);
  const at::Tensor hb = field(b, 2, 2);
  const at::Tensor high =
      hb.index({Slice(), Slice(0, 1)})
          .bitwise_or(hb.index({Slice(), Slice(1, 2)}).__lshift__(8));
  const at::Tensor two = at::arange(0, 16, 2, hb.options());
  const at::Tensor four = at::arange(0, 8, 4, hb.options());
  const at::Tensor low = field(b, 4, 4)
                             .view({n, 4, 1})
                             .__rshift__(four.view({1, 1, 2}))
                             .bitwise_and(0xF)
                             .reshape({n, 8});
  const at::Tensor scale =
      low.bitwise_or(
          high.__rshift__(two.view({1, 8})).bitwise_and(3).__lshift__(4)) -
      32;
  const at::Tensor dl = (d * scale.to(at::kFloat)).unsqueeze(2);
  const at::Tensor qs = field(b, 8, 128).view({n, 8, 16});
  const at::Tensor q =
      at::cat({qs.bitwise_and(0xF), qs.__rshift__(4)}, 2).to(at::kLong);
  return (dl * iq4_levels(b.device()).index({q})).reshape({-1});
}

/// Q6_K: 16 sub-blocks of 16 six-bit values (4 low bits, 2 high), int8 scales.
at::Tensor dequantize_q6_k(const at::Tensor& b) {
  const std::int64_t n = b.size(0);
  const at::Tensor d = half_field(b, 208);
  const at::Tensor ql = field(b, 0, 128).view({n, 2, 64});
  const at::Tensor qh = field(b, 128, 64).view({n, 2, 32});
  const at::Tensor sc = b.index({Slice(), Slice(192, 208)})
                            .contiguous()
                            .view(at::kChar)
                            .to(at::kFloat)
                            .view({n, 2, 8});
  const at::Tensor ql_a = ql.index({Slice(), Slice(), Slice(0, 32)});
  const at::Tensor ql_b = ql.index({Slice(), Slice(), Slice(32, 64)});
  const at::Tensor q1 =
      ql_a.bitwise_and(0xF).bitwise_or(qh.bitwise_and(3).__lshift__(4));
  const at::Tensor q2 = ql_b.bitwise_and(0xF).bitwise_or(
      qh.__rshift__(2).bitwise_and(3).__lshift__(4));
  const at::Tensor q3 = ql_a.__rshift__(4).bitwise_or(
      qh.__rshift__(4).bitwise_and(3).__lshift__(4));
  const at::Tensor q4 = ql_b.__rshift__(4).bitwise_or(
      qh.__rshift__(6).bitwise_and(3).__lshift__(4));
  // [n, 2 halves, 128]: elements l, l + 32, l + 64, l + 96 of each half.
  const at::Tensor q = (at::cat({q1, q2, q3, q4}, 2) - 32).to(at::kFloat);
  // Element e of a half has scale e / 16.
  const at::Tensor scale = (d.view({n, 1, 1}) * sc).repeat_interleave(16, 2);
  return (scale * q).reshape({-1});
}

/// Q4_K and Q5_K (`five`): 8 sub-blocks of 32 four-bit values (and a fifth
/// bit from qh), six-bit scales and mins.
at::Tensor dequantize_q4_k_q5_k(const at::Tensor& b, bool five) {
  const std::int64_t n = b.size(0);
  const at::Tensor d = half_field(b, 0), dmin = half_field(b, 2);
  auto [scales, mins] = scales_mins_k4(field(b, 4, 12));
  // 4 chunks of 32 bytes; each gives sub-block 2c (low nibbles) and 2c + 1
  // (high nibbles): [n, 4, 2, 32] -> [n, 8, 32].
  const at::Tensor qs = field(b, five ? 48 : 16, 128).view({n, 4, 1, 32});
  at::Tensor q =
      at::cat({qs.bitwise_and(0xF), qs.__rshift__(4)}, 2).view({n, 8, 32});
  if (five) {
    // Sub-block s takes bit s of each of the 32 qh bytes as its 16.
    const at::Tensor qh = field(b, 16, 32).view({n, 1, 32});
    const at::Tensor bit = at::arange(8, qh.options()).view({1, 8, 1});
    q = q + qh.__rshift__(bit).bitwise_and(1) * 16;
  }
  const at::Tensor d1 = (d * scales).unsqueeze(2);
  const at::Tensor m1 = (dmin * mins).unsqueeze(2);
  return (d1 * q.to(at::kFloat) - m1).reshape({-1});
}

at::Tensor dequantize_float(const QuantizedTensor& t) {
  const at::Tensor& b = t.blocks;
  if (t.float8)
    return (float8_values(*t.float8, b.device()).index({b.to(at::kLong)}) *
            t.scale.view({-1, 1}))
        .reshape({-1});
  switch (t.type) {
  case GgmlType::f32:
    return b.contiguous().view(at::kFloat).reshape({-1});
  case GgmlType::f16:
    return b.contiguous().view(at::kHalf).reshape({-1}).to(at::kFloat);
  case GgmlType::bf16:
    return b.contiguous().view(at::kBFloat16).reshape({-1}).to(at::kFloat);
  case GgmlType::q2_k:
    return dequantize_q2_k(b);
  case GgmlType::q3_k:
    return dequantize_q3_k(b);
  case GgmlType::iq4_xs:
    return dequantize_iq4_xs(b);
  case GgmlType::q4_k:
  case GgmlType::q5_k:
    return dequantize_q4_k_q5_k(b, t.type == GgmlType::q5_k);
  case GgmlType::q6_k:
    return dequantize_q6_k(b);
  default:
    if (at::Tensor x = dequantize_32(b, t.type); x.defined()) return x;
  }
  throw InvalidArgument(fmt::format("cannot dequantize {}",
                                    ggml_type_name(std::uint32_t(t.type))));
}

/// An fp8 weight into `out` (float32, bfloat16 or half, on the cpu): each
/// byte's value times its row's scale in float32, converted as Tensor::to()
/// does, rows over the intra-op threads.
void dequantize_float8_on_cpu(const QuantizedTensor& tensor, at::Tensor& out) {
  const auto& table = float8_table(*tensor.float8);
  const at::Tensor blocks = tensor.blocks.contiguous();
  const at::Tensor scale = tensor.scale.contiguous();
  const std::uint8_t* in = blocks.data_ptr<std::uint8_t>();
  const float* row_scale = scale.data_ptr<float>();
  const std::int64_t rows = blocks.size(0), columns = blocks.size(1);
  auto decode = [&](auto* y) {
    using T = std::remove_pointer_t<decltype(y)>;
    at::parallel_for(0, rows, std::max<std::int64_t>(1, 65536 / columns),
                     [&](std::int64_t begin, std::int64_t end) {
                       for (std::int64_t r = begin; r < end; ++r) {
                         const float s = row_scale[r];
                         const std::uint8_t* x = in + r * columns;
                         T* dst = y + r * columns;
                         for (std::int64_t j = 0; j < columns; ++j)
                           dst[j] = T(table[x[j]] * s);
                       }
                     });
  };
  switch (out.scalar_type()) {
  case at::kFloat:
    return decode(out.data_ptr<float>());
  case at::kBFloat16:
    return decode(out.data_ptr<at::BFloat16>());
  default:
    return decode(out.data_ptr<at::Half>());
  }
}

}  // namespace

std::int64_t QuantizedTensor::numel() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

Bytes QuantizedTensor::bytes() const {
  return (blocks.defined() ? Bytes(blocks.numel()) : 0) +
         (scale.defined() ? Bytes(scale.nbytes()) : 0);
}

std::string QuantizedTensor::type_name() const {
  return float8 ? std::string(float8_dtype_name(*float8))
                : ggml_type_name(std::uint32_t(type));
}

void QuantizedTensor::to(const c10::Device& device) {
  if (blocks.defined() && blocks.device() != device) blocks = blocks.to(device);
  if (scale.defined() && scale.device() != device) scale = scale.to(device);
}

QuantizedTensor make_float8(Float8Format format,
                            std::vector<std::int64_t> shape, at::Tensor bytes,
                            at::Tensor scale) {
  QuantizedTensor t;
  t.float8 = format;
  t.shape = std::move(shape);
  const std::int64_t rows = t.shape.size() == 2 ? t.shape[0] : 0;
  if (rows <= 0 || t.shape[1] <= 0 || bytes.scalar_type() != at::kByte ||
      bytes.numel() != t.numel() || scale.scalar_type() != at::kFloat ||
      (scale.numel() != 1 && scale.numel() != rows) ||
      scale.device() != bytes.device())
    throw InvalidArgument(fmt::format(
        "{} weight of shape {}: expected {} bytes of uint8 and 1 or {} "
        "float32 scales on one device, got {} of {} and {} of {}",
        float8_dtype_name(format), c10::str(at::IntArrayRef(t.shape)),
        t.numel(), rows, bytes.numel(),
        std::string(c10::toString(bytes.scalar_type())), scale.numel(),
        std::string(c10::toString(scale.scalar_type()))));
  t.blocks = bytes.reshape({rows, t.shape[1]});
  t.scale = scale.reshape({-1}).expand({rows}).contiguous();
  return t;
}

QuantizedTensor make_quantized(GgmlType type, std::vector<std::int64_t> shape,
                               at::Tensor blocks) {
  const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(type));
  if (!info || !info->supported)
    throw InvalidArgument(fmt::format("cannot keep {} weights: mold reads {}",
                                      ggml_type_name(std::uint32_t(type)),
                                      supported_ggml_types()));
  QuantizedTensor t;
  t.type = type;
  t.shape = std::move(shape);
  const std::int64_t elements = t.numel();
  if (blocks.scalar_type() != at::kByte || elements <= 0 ||
      elements % std::int64_t(info->block_elements) ||
      blocks.numel() != elements / std::int64_t(info->block_elements) *
                            std::int64_t(info->block_bytes))
    throw InvalidArgument(fmt::format(
        "{} blocks for a tensor of {} elements: expected {} bytes of uint8, "
        "got {} of {}",
        info->name, elements,
        elements / std::int64_t(info->block_elements) *
            std::int64_t(info->block_bytes),
        blocks.numel(), std::string(c10::toString(blocks.scalar_type()))));
  t.blocks = blocks.reshape({elements / std::int64_t(info->block_elements),
                             std::int64_t(info->block_bytes)});
  return t;
}

QuantizedTensor load_quantized(const GgufFile& file, const GgufTensorInfo& info,
                               const at::Device& device) {
  const GgmlTypeInfo* type = ggml_type_info(info.type);
  if (!type || !type->supported)
    throw GgufError(fmt::format("GGUF {}: tensor \"{}\" {}",
                                file.path().string(), info.name,
                                unreadable_ggml_type(info.type)));
  // Read from the file into host memory (sequential reads, no page of the
  // file kept resident), then to the device.
  at::Tensor host = at::empty({std::int64_t(info.bytes)},
                              at::TensorOptions().dtype(at::kByte));
  file.read(info, host.data_ptr());
  at::Tensor blocks = device.is_cpu() ? host : host.to(device);
  return make_quantized(GgmlType(info.type), info.torch_shape(),
                        std::move(blocks));
}

at::Tensor dequantize_by_tensor_ops(const QuantizedTensor& tensor,
                                    at::ScalarType dtype) {
  at::Tensor shaped = dequantize_float(tensor).view(tensor.shape);
  return dtype == at::kFloat ? shaped : shaped.to(dtype);
}

void dequantize_into(const QuantizedTensor& tensor, at::Tensor& out) {
  if (!out.defined() || !out.is_contiguous() || out.numel() != tensor.numel() ||
      out.device() != tensor.blocks.device())
    throw InvalidArgument(fmt::format(
        "dequantize_into: the output must be a contiguous tensor of {} "
        "elements on {}",
        tensor.numel(), tensor.blocks.device().str()));
  const at::ScalarType dtype = out.scalar_type();
  if (!tensor.blocks.is_cpu() ||
      (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf)) {
    out.copy_(dequantize_by_tensor_ops(tensor, dtype).view(out.sizes()));
    return;
  }
  if (tensor.float8) {
    dequantize_float8_on_cpu(tensor, out);
    return;
  }
  const GgmlTypeInfo& info = *ggml_type_info(std::uint32_t(tensor.type));
  const at::Tensor blocks = tensor.blocks.contiguous();
  const std::uint8_t* in = blocks.data_ptr<std::uint8_t>();
  const auto per_block = std::int64_t(info.block_elements);
  const auto bytes = std::int64_t(info.block_bytes);
  const std::int64_t count = blocks.size(0);
  if (dtype == at::kFloat) {
    float* y = out.data_ptr<float>();
    // Chunks of blocks over the intra-op threads: one pass over memory.
    at::parallel_for(0, count, 64, [&](std::int64_t begin, std::int64_t end) {
      dequantize_blocks(tensor.type, in + begin * bytes,
                        std::size_t((end - begin) * per_block),
                        y + begin * per_block);
    });
    return;
  }
  if (dtype == at::kBFloat16 && dequantizes_to_bfloat16_directly(tensor.type)) {
    // Straight to bfloat16, vectorized: a quantized denoiser's matrices are
    // dequantized this way as each layer runs.
    auto* y = reinterpret_cast<std::uint16_t*>(out.data_ptr<at::BFloat16>());
    at::parallel_for(0, count, 64, [&](std::int64_t begin, std::int64_t end) {
      dequantize_blocks_to_bfloat16(tensor.type, in + begin * bytes,
                                    std::size_t((end - begin) * per_block),
                                    y + begin * per_block);
    });
    return;
  }
  // Half precision: each chunk through a small float buffer (cache
  // resident) and converted as it leaves, rather than a whole float copy
  // converted after. The conversion is the one Tensor::to() does (round to
  // nearest even), so the values are the same.
  constexpr std::int64_t kChunkElements = 8192;
  const std::int64_t chunk_blocks =
      std::max<std::int64_t>(1, kChunkElements / per_block);
  auto convert = [&](auto* y) {
    using T = std::remove_pointer_t<decltype(y)>;
    at::parallel_for(
        0, count, chunk_blocks, [&](std::int64_t begin, std::int64_t end) {
          std::vector<float> buffer(std::size_t(chunk_blocks * per_block));
          for (std::int64_t b = begin; b < end; b += chunk_blocks) {
            const std::int64_t n = std::min(chunk_blocks, end - b) * per_block;
            dequantize_blocks(tensor.type, in + b * bytes, std::size_t(n),
                              buffer.data());
            T* dst = y + b * per_block;
            for (std::int64_t i = 0; i < n; ++i) dst[i] = T(buffer[i]);
          }
        });
  };
  if (dtype == at::kBFloat16)
    convert(out.data_ptr<at::BFloat16>());
  else
    convert(out.data_ptr<at::Half>());
}

at::Tensor dequantize(const QuantizedTensor& tensor, at::ScalarType dtype) {
  if (!tensor.blocks.is_cpu()) return dequantize_by_tensor_ops(tensor, dtype);
  const bool direct =
      dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf;
  at::Tensor out = at::empty(
      {tensor.numel()}, at::TensorOptions().dtype(direct ? dtype : at::kFloat));
  dequantize_into(tensor, out);
  out = out.view(tensor.shape);
  return direct ? out : out.to(dtype);
}

}  // namespace mold
