#pragma once
/// ggml's tensor types as GGUF files store them: the plain ones (F32, F16,
/// BF16) and the block quantizations mold reads (Q4_0, Q4_1, Q5_0, Q5_1,
/// Q8_0; the K-quants Q2_K .. Q6_K; the non-linear IQ4_NL and IQ4_XS), with
/// their block sizes and the
/// reference dequantization of the format description, element by element.
/// Torch-free: this is the arithmetic that mold/tensor/quantized_tensor.hpp
/// runs as tensor operations on any device, and what tests check it against.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mold {

/// The values of ggml's `ggml_type` (ggml.h), as stored in GGUF tensor
/// infos.
enum class GgmlType : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
  q1_0 = 41,
  q2_0 = 42,
};

/// What a type is: its name as ggml writes it ("Q4_K"), how many elements a
/// block holds and how many bytes it takes, and whether mold reads it.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;
  std::size_t block_elements;
  std::size_t block_bytes;
  bool supported;  ///< dequantize_blocks() and dequantize() take it
};

/// The info of a type id from a file; nullptr for an id ggml does not define
/// (one it never did, or one it removed from GGUF files).
const GgmlTypeInfo* ggml_type_info(std::uint32_t id);
/// "Q4_K"; the name of a removed id ("Q4_0_4_4"); "type 99" for an id ggml
/// never defined.
std::string ggml_type_name(std::uint32_t id);
/// Why a file's type id cannot be read, for a message after "tensor \"x\" ":
/// "is IQ2_XXS (ggml type 16), which mold does not read: ...". Names the type,
/// the types mold reads and what to do; for an unknown id, the newest id mold
/// knows.
std::string unreadable_ggml_type(std::uint32_t id);

/// "F32, F16, BF16, Q4_0, ... and Q6_K": the types mold reads, from the
/// table, for messages.
std::string supported_ggml_types();

/// Bytes of `elements` elements of `type`; nullopt when `elements` is not a
/// whole number of blocks or the bytes would overflow.
std::optional<std::uint64_t> ggml_bytes(const GgmlTypeInfo& type,
                                        std::uint64_t elements);

/// IEEE half and bfloat16 bit patterns as floats (exact).
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

/// The 6-bit scale and min of sub-block `j` (0-7) of a Q4_K or Q5_K
/// super-block, from its 12 packed bytes `scales`.
void scale_min_k4(int j, const std::uint8_t* scales, std::uint8_t& scale,
                  std::uint8_t& min);

/// Dequantizes `elements` elements (a whole number of blocks) of a supported
/// type from `blocks` (little-endian, as in the file) into `out`, following
/// ggml's reference formulas (dequantize_row_* of ggml-quants.c) in float32.
/// Throws InvalidArgument for an unsupported type or a partial block.
void dequantize_blocks(GgmlType type, const std::uint8_t* blocks,
                       std::size_t elements, float* out);

/// A float as the IEEE half bit pattern nearest to it (round to nearest
/// even, as ggml's GGML_FP32_TO_FP16).
std::uint16_t float_to_half(float value);

/// Quantizes `elements` floats (a whole number of blocks) into `out` as
/// ggml's reference quantizers do (quantize_row_q4_0_ref, _q8_0_ref): the
/// types mold makes itself, for a seeded model's q4 and q8 variants. Other
/// types come from GGUF files. Throws InvalidArgument for another type or
/// a partial block.
void quantize_blocks(GgmlType type, const float* values, std::size_t elements,
                     std::uint8_t* out);

}  // namespace mold
